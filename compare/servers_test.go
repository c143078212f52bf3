package compare_test

import (
	"context"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	rbacconfigv3 "github.com/envoyproxy/go-control-plane/envoy/config/rbac/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	xdscreds "google.golang.org/grpc/credentials/xds"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/xds"
	"google.golang.org/protobuf/proto"

	"github.com/xdslens/xdslens/internal/testing/servertest"
	"github.com/xdslens/xdslens/internal/testing/xdstest"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/backends"
	"github.com/xdslens/xdslens/xdsclient"
	"github.com/xdslens/xdslens/xdsserver"
)

// servedPair is xdslens's xDS-enabled server and grpc-go's
// (xds.NewGRPCServer with xDS server credentials), each on its own
// loopback address, configured by one control plane with the same
// Listener but for the address.
type servedPair struct {
	env  *servertest.Env
	pool *xdsclient.Pool // xdslens's
	// addrs are the listening addresses, ours first.
	addrs [2]string
	names [2]string // Listener resources

	mu    sync.Mutex
	modes [2][]string // serving modes reported, SERVING or NOT_SERVING
	why   [2]string   // the error of the last mode reported, "" for none
	// listeners counts the Listeners xdslens's server started using
	// (xdsserver's ListenerChanged hook); grpc-go's says nothing of them.
	listeners int
	change    chan struct{}
}

const (
	ours   = 0
	theirs = 1
)

var sideNames = [2]string{"xdslens", "grpc-go"}

// newServedPair starts both servers, with pool options for xdslens's
// client (grpc-go's resource timeout is its own 15s).
func newServedPair(t testing.TB, o servertest.Options, opts ...xdsclient.Option) *servedPair {
	t.Helper()
	return newServedPairWith(t, o, serverOptions{}, opts...)
}

// serverOptions are options of each server beyond the pair's own.
type serverOptions struct {
	ours   []xdsserver.Option
	theirs []grpc.ServerOption
}

// newServedPairWith is newServedPair with more server options.
func newServedPairWith(t testing.TB, o servertest.Options, so serverOptions, opts ...xdsclient.Option) *servedPair {
	t.Helper()
	env := servertest.NewEnv(t, o)
	p := &servedPair{env: env, pool: env.Pool(opts...), change: make(chan struct{})}
	record := func(side int, mode string, err error) {
		p.mu.Lock()
		p.modes[side] = append(p.modes[side], mode)
		p.why[side] = ""
		if err != nil {
			p.why[side] = err.Error()
		}
		close(p.change)
		p.change = make(chan struct{})
		p.mu.Unlock()
	}

	ourSrv, err := xdsserver.New(p.pool, append([]xdsserver.Option{xdsserver.WithServingModeCallback(func(c xdsserver.ServingModeChange) {
		record(ours, c.Mode.String(), c.Err)
	}), xdsserver.WithHooks(&xdsserver.Hooks{ListenerChanged: func(xdsserver.ListenerChangeInfo) {
		p.mu.Lock()
		p.listeners++
		close(p.change)
		p.change = make(chan struct{})
		p.mu.Unlock()
	}})}, so.ours...)...)
	if err != nil {
		t.Fatal(err)
	}
	creds, err := xdscreds.NewServerCredentials(xdscreds.ServerOptions{FallbackCreds: insecure.NewCredentials()})
	if err != nil {
		t.Fatal(err)
	}
	theirSrv, err := xds.NewGRPCServer(append([]grpc.ServerOption{grpc.Creds(creds), xds.BootstrapContentsForTesting([]byte(env.Bootstrap)),
		xds.ServingModeCallback(func(_ net.Addr, a xds.ServingModeChangeArgs) {
			mode := "NOT_SERVING"
			if a.Mode == connectivity.ServingModeServing {
				mode = "SERVING"
			}
			record(theirs, mode, a.Err)
		})}, so.theirs...)...)
	if err != nil {
		t.Fatal(err)
	}
	for side, srv := range []interface {
		grpc.ServiceRegistrar
		Serve(net.Listener) error
		Stop()
	}{ourSrv, theirSrv} {
		healthpb.RegisterHealthServer(srv, health.NewServer())
		backends.RegisterTestService(srv, sideNames[side])
		lis := servertest.Listen(t)
		p.addrs[side] = lis.Addr().String()
		p.names[side] = servertest.ListenerName(p.addrs[side])
		done := make(chan struct{})
		go func() {
			defer close(done)
			srv.Serve(lis) //nolint:errcheck // ends with Stop
		}()
		t.Cleanup(func() {
			srv.Stop()
			<-done
		})
	}
	return p
}

// listenerFunc returns the Listener of the server of side, named name,
// on addr; nil for none.
type listenerFunc func(side int, name, addr string) *listenerv3.Listener

// set serves, for each server, what listener returns for it, and extra.
func (p *servedPair) set(listener listenerFunc, extra ...proto.Message) {
	res := slices.Clone(extra)
	for side := range p.addrs {
		if l := listener(side, p.names[side], p.addrs[side]); l != nil {
			res = append(res, l)
		}
	}
	p.env.Set(res...)
}

// waitModes waits until both servers' last reported serving mode is
// want.
func (p *servedPair) waitModes(t testing.TB, want string, within time.Duration) {
	t.Helper()
	p.waitEachMode(t, [2]string{want, want}, within)
}

// listenersUsed returns how many Listeners xdslens's server has started
// using.
func (p *servedPair) listenersUsed() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.listeners
}

// waitListeners waits until xdslens's server has started using n
// Listeners.
func (p *servedPair) waitListeners(t testing.TB, n int) {
	t.Helper()
	deadline := time.After(xdstest.Timeout)
	for {
		p.mu.Lock()
		got, ch := p.listeners, p.change
		p.mu.Unlock()
		if got >= n {
			return
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("xdslens's server started using %d Listeners, want %d", got, n)
		}
	}
}

// waitEachMode waits until the last serving mode each server reported is
// its own of want, xdslens's first.
func (p *servedPair) waitEachMode(t testing.TB, want [2]string, within time.Duration) {
	t.Helper()
	deadline := time.After(within)
	for {
		p.mu.Lock()
		last := [2]string{}
		for side, ms := range p.modes {
			if len(ms) > 0 {
				last[side] = ms[len(ms)-1]
			}
		}
		ch := p.change
		p.mu.Unlock()
		if last == want {
			return
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("serving modes %v (xdslens, grpc-go), want %v", last, want)
		}
	}
}

// call makes an RPC of method to the server of side with creds, from
// local ("" for any), and md, and returns its code's name; a connection
// that fails is UNAVAILABLE.
func (p *servedPair) call(t *testing.T, side int, creds credentials.TransportCredentials, local, method string, md ...string) string {
	t.Helper()
	opts := []grpc.DialOption{grpc.WithTransportCredentials(creds)}
	if local != "" {
		opts = append(opts, grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
			d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}}
			return d.DialContext(ctx, "tcp", addr)
		}))
	}
	conn, err := grpc.NewClient("passthrough:///"+p.addrs[side], opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err = servertest.Call(ctx, conn, method, md...)
	return status.Code(err).String()
}

// both makes the RPC on both servers and fails t unless they end alike;
// it returns the outcome.
func (p *servedPair) both(t *testing.T, creds credentials.TransportCredentials, local, method string, md ...string) string {
	t.Helper()
	o, g := p.call(t, ours, creds, local, method, md...), p.call(t, theirs, creds, local, method, md...)
	if o != g {
		t.Errorf("%s from %q %v: xdslens %s, grpc-go %s", method, local, md, o, g)
	}
	return o
}

// eventually repeats both until both end with want.
func (p *servedPair) eventually(t *testing.T, want string, creds credentials.TransportCredentials, method string, md ...string) {
	t.Helper()
	var o, g string
	deadline := time.Now().Add(xdstest.Timeout)
	for time.Now().Before(deadline) {
		o, g = p.call(t, ours, creds, "", method, md...), p.call(t, theirs, creds, "", method, md...)
		if o == want && g == want {
			return
		}
		time.Sleep(20 * time.Millisecond) // a configuration reaches both servers asynchronously
	}
	t.Fatalf("%s %v: xdslens %s, grpc-go %s; want both %s", method, md, o, g, want)
}

var plaintext = insecure.NewCredentials()

// protoClone copies an RBAC config.
func protoClone(m *rbacconfigv3.RBAC) *rbacconfigv3.RBAC { return proto.Clone(m).(*rbacconfigv3.RBAC) }

// waitMode waits until the server of side last reported the serving mode
// want.
func (p *servedPair) waitMode(t testing.TB, side int, want string) {
	t.Helper()
	deadline := time.After(xdstest.Timeout)
	for {
		p.mu.Lock()
		ms, ch := p.modes[side], p.change
		p.mu.Unlock()
		if len(ms) > 0 && ms[len(ms)-1] == want {
			return
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("%s's serving modes %v, want the last %s", sideNames[side], ms, want)
		}
	}
}
