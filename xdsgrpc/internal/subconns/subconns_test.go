package subconns_test

import (
	"context"
	"net"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/resolver/manual"

	"github.com/xdslens/xdslens/internal/testing/testmain"
	"github.com/xdslens/xdslens/internal/testing/xdstest"
	"github.com/xdslens/xdslens/xdsgrpc/internal/subconns"
)

func TestMain(m *testing.M) { testmain.Run(m) }

// countingListener counts the connections a backend accepts.
type countingListener struct {
	net.Listener
	mu       sync.Mutex
	accepted int
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.mu.Lock()
		l.accepted++
		l.mu.Unlock()
	}
	return c, err
}

func (l *countingListener) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.accepted
}

// states records what one handle's listener is told.
type states struct {
	mu  sync.Mutex
	got []connectivity.State
	ch  chan connectivity.State
}

func newStates() *states { return &states{ch: make(chan connectivity.State, 16)} }

func (s *states) listen(st balancer.SubConnState) {
	s.mu.Lock()
	s.got = append(s.got, st.ConnectivityState)
	s.mu.Unlock()
	s.ch <- st.ConnectivityState
}

func (s *states) await(t *testing.T, ctx context.Context, want connectivity.State) {
	t.Helper()
	for {
		select {
		case got := <-s.ch:
			if got == want {
				return
			}
		case <-ctx.Done():
			t.Fatalf("never told %v", want)
		}
	}
}

// poolPolicy is a policy that, given one address, makes two handles on it
// through a Pool, as two clusters of a channel would, and hands them to
// the test.
type poolPolicy struct {
	cc    balancer.ClientConn
	pool  *subconns.Pool
	ready chan [2]balancer.SubConn
	a, b  *states
}

func (p *poolPolicy) UpdateClientConnState(s balancer.ClientConnState) error {
	addr := s.ResolverState.Addresses[0]
	h1, err := p.pool.NewSubConn([]resolver.Address{addr}, balancer.NewSubConnOptions{StateListener: p.a.listen})
	if err != nil {
		return err
	}
	h2, err := p.pool.NewSubConn([]resolver.Address{addr}, balancer.NewSubConnOptions{StateListener: p.b.listen})
	if err != nil {
		return err
	}
	p.ready <- [2]balancer.SubConn{h1, h2}
	return nil
}
func (p *poolPolicy) ResolverError(error)                                        {}
func (p *poolPolicy) UpdateSubConnState(balancer.SubConn, balancer.SubConnState) {}
func (p *poolPolicy) Close()                                                     {}
func (p *poolPolicy) ExitIdle()                                                  {}

type poolBuilder struct{ p *poolPolicy }

func (b poolBuilder) Name() string { return "subconns_test" }
func (b poolBuilder) Build(cc balancer.ClientConn, _ balancer.BuildOptions) balancer.Balancer {
	b.p.cc, b.p.pool = cc, subconns.New(cc)
	return b.p
}

// TestSharedConnection makes two handles on one address: one connection
// is made, both handles hear its states, shutting one down tells it
// SHUTDOWN and leaves the connection to the other, and shutting down the
// last closes it.
func TestSharedConnection(t *testing.T) {
	ctx := xdstest.Context(t)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cl := &countingListener{Listener: lis}
	srv := grpc.NewServer()
	go srv.Serve(cl)
	defer srv.Stop()

	p := &poolPolicy{ready: make(chan [2]balancer.SubConn, 1), a: newStates(), b: newStates()}
	balancer.Register(poolBuilder{p})
	r := manual.NewBuilderWithScheme("subconns-test")
	r.InitialState(resolver.State{Addresses: []resolver.Address{{Addr: lis.Addr().String()}}})
	cc, err := grpc.NewClient(r.Scheme()+":///x", grpc.WithResolvers(r), grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultServiceConfig(`{"loadBalancingConfig": [{"subconns_test": {}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	cc.Connect()
	var hs [2]balancer.SubConn
	select {
	case hs = <-p.ready:
	case <-ctx.Done():
		t.Fatal("the policy never got its address")
	}
	if n := p.pool.Connections(); n != 1 {
		t.Fatalf("%d shared connections for one address, want 1", n)
	}
	hs[0].Connect()
	p.a.await(t, ctx, connectivity.Ready)
	p.b.await(t, ctx, connectivity.Ready)
	if n := cl.count(); n != 1 {
		t.Errorf("the backend accepted %d connections, want 1", n)
	}
	hs[0].Shutdown()
	p.a.await(t, ctx, connectivity.Shutdown)
	if n := p.pool.Connections(); n != 1 {
		t.Errorf("%d shared connections after one handle shut down, want 1", n)
	}
	// A third handle on the shared connection starts READY.
	c := newStates()
	h3, err := p.pool.NewSubConn([]resolver.Address{{Addr: lis.Addr().String()}}, balancer.NewSubConnOptions{StateListener: c.listen})
	if err != nil {
		t.Fatal(err)
	}
	c.await(t, ctx, connectivity.Ready)
	hs[1].Shutdown()
	h3.Shutdown()
	if n := p.pool.Connections(); n != 0 {
		t.Errorf("%d shared connections after every handle shut down, want 0", n)
	}
}
