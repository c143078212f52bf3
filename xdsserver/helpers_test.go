package xdsserver_test

import (
	"context"
	"log/slog"
	"net"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/xdslens/xdslens/internal/testing/servertest"
	"github.com/xdslens/xdslens/internal/testing/xdstest"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/backends"
	"github.com/xdslens/xdslens/xdsclient"
	"github.com/xdslens/xdslens/xdsserver"
)

// events records what a server's hooks report, for tests to wait on.
type events struct {
	mu      sync.Mutex
	changed chan struct{} // closed and replaced at every event
	modes   []xdsserver.ServingModeChange
	changes []xdsserver.ListenerChangeInfo
	conns   []xdsserver.ConnInfo
	refused []xdsserver.ConnRefusedInfo
	drained []xdsserver.ConnDrainInfo
	closed  []xdsserver.ConnInfo
	ignored []xdsserver.ConnInfo // GoAwayIgnored
	expired []xdsserver.ConnInfo // DrainGraceExpired
	failed  []xdsserver.HandshakeInfo
	authz   []xdsserver.AuthzInfo
}

func newEvents() *events { return &events{changed: make(chan struct{})} }

func (e *events) add(f func()) {
	e.mu.Lock()
	defer e.mu.Unlock()
	f()
	close(e.changed)
	e.changed = make(chan struct{})
}

func (e *events) hooks() *xdsserver.Hooks {
	return &xdsserver.Hooks{
		ServingModeChanged: func(c xdsserver.ServingModeChange) { e.add(func() { e.modes = append(e.modes, c) }) },
		ListenerChanged:    func(c xdsserver.ListenerChangeInfo) { e.add(func() { e.changes = append(e.changes, c) }) },
		ConnectionAccepted: func(c xdsserver.ConnInfo) { e.add(func() { e.conns = append(e.conns, c) }) },
		ConnectionRefused:  func(c xdsserver.ConnRefusedInfo) { e.add(func() { e.refused = append(e.refused, c) }) },
		ConnectionDrained:  func(c xdsserver.ConnDrainInfo) { e.add(func() { e.drained = append(e.drained, c) }) },
		ConnectionClosed:   func(c xdsserver.ConnInfo) { e.add(func() { e.closed = append(e.closed, c) }) },
		GoAwayIgnored:      func(c xdsserver.ConnInfo) { e.add(func() { e.ignored = append(e.ignored, c) }) },
		DrainGraceExpired:  func(c xdsserver.ConnInfo) { e.add(func() { e.expired = append(e.expired, c) }) },
		HandshakeFailed:    func(c xdsserver.HandshakeInfo) { e.add(func() { e.failed = append(e.failed, c) }) },
		AuthzDecision:      func(c xdsserver.AuthzInfo) { e.add(func() { e.authz = append(e.authz, c) }) },
	}
}

// wait waits until cond, called under the lock, holds.
func (e *events) wait(t testing.TB, what string, cond func(e *events) bool) {
	t.Helper()
	deadline := time.After(xdstest.Timeout)
	for {
		e.mu.Lock()
		ok := cond(e)
		ch := e.changed
		e.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// lastMode returns the last serving mode reported, ModeStarting when none
// was.
func (e *events) lastMode() xdsserver.ServingModeChange {
	if len(e.modes) == 0 {
		return xdsserver.ServingModeChange{Mode: xdsserver.ModeStarting}
	}
	return e.modes[len(e.modes)-1]
}

// served is an xDS-enabled server serving on 127.0.0.1 with the health
// service and grpc.testing.TestService.
type served struct {
	srv    *xdsserver.Server
	pool   *xdsclient.Pool
	addr   string
	host   string
	port   uint32
	ev     *events
	health *health.Server
}

// serve starts a server of pool on 127.0.0.1, stopped (gracefully when
// the test's RPCs are done) when the test ends.
func serve(t *testing.T, pool *xdsclient.Pool, opts ...xdsserver.Option) *served {
	t.Helper()
	ev := newEvents()
	srv, err := xdsserver.New(pool, append([]xdsserver.Option{xdsserver.WithHooks(ev.hooks()), xdsserver.WithDrainGraceTime(time.Minute), xdsserver.WithLogger(slog.New(slog.DiscardHandler))}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	hs := health.NewServer()
	healthpb.RegisterHealthServer(srv, hs)
	lis := servertest.Listen(t)
	backends.RegisterTestService(srv, lis.Addr().String())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(lis) }()
	t.Cleanup(func() {
		srv.Stop()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	host, port := servertest.HostPort(t, lis.Addr().String())
	return &served{srv: srv, pool: pool, addr: lis.Addr().String(), host: host, port: port, ev: ev, health: hs}
}

// name is the server's Listener resource.
func (s *served) name() string { return servertest.ListenerName(s.addr) }

// plaintext dials the server without TLS.
func (s *served) plaintext(t *testing.T, opts ...grpc.DialOption) *grpc.ClientConn {
	return servertest.Dial(t, s.addr, append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}, opts...)...)
}

// fromLocal dials from the local address local ("127.0.0.2:0" style).
func fromLocal(local string) grpc.DialOption {
	return grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
		la, err := net.ResolveTCPAddr("tcp", local)
		if err != nil {
			return nil, err
		}
		d := net.Dialer{LocalAddr: la}
		return d.DialContext(ctx, "tcp", addr)
	})
}

func ctxT(t *testing.T) context.Context { return xdstest.Context(t) }

// counts returns how many connections were accepted and refused so far.
func (e *events) counts() (accepted, refused int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.conns), len(e.refused)
}

func (e *events) lastModeLocked() xdsserver.ServingModeChange {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.lastMode()
}

func (e *events) drainedCount() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.drained)
}

// emptyMsg is an empty protobuf message, for RPCs whose messages are
// empty.
type emptyMsg = emptypb.Empty
