package clusterlb_test

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/attributes"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/orca"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/resolver/manual"
	"google.golang.org/grpc/status"

	"github.com/xdslens/xdslens/internal/testing/testmain"
	"github.com/xdslens/xdslens/internal/testing/xdstest"
	"github.com/xdslens/xdslens/xdsclient/xdsconfig"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
	"github.com/xdslens/xdslens/xdsgrpc/internal/clusterlb"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, goleak.Cleanup(testmain.Exit)) }

// testPolicy is the name under which the tests register the Balancer:
// it takes its Config from the resolver state's attributes, as a parent
// policy would hand it one.
const testPolicy = "xdslens_clusterlb_test"

func init() { balancer.Register(testBuilder{}) }

type cfgKey struct{}

// pickerSink receives every picker the Balancer publishes, for the tests
// that pick directly. With onDone, the pickers gRPC gets call it with the
// DoneInfo of each pick they made, once the Balancer's Done has run.
type pickerSink struct {
	mu     sync.Mutex
	states []balancer.State
	onDone func(balancer.DoneInfo)
}

// doneTap is a picker that tells onDone when gRPC ends its picks.
type doneTap struct {
	balancer.Picker
	onDone func(balancer.DoneInfo)
}

func (p doneTap) Pick(info balancer.PickInfo) (balancer.PickResult, error) {
	res, err := p.Picker.Pick(info)
	if err == nil {
		done := res.Done
		res.Done = func(di balancer.DoneInfo) {
			if done != nil {
				done(di)
			}
			p.onDone(di)
		}
	}
	return res, err
}

func (s *pickerSink) last() balancer.State {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.states) == 0 {
		return balancer.State{}
	}
	return s.states[len(s.states)-1]
}

type sinkKey struct{}

type testBuilder struct{}

func (testBuilder) Name() string { return testPolicy }

func (testBuilder) Build(cc balancer.ClientConn, opts balancer.BuildOptions) balancer.Balancer {
	w := &sinkCC{ClientConn: cc}
	return &testBalancer{Balancer: clusterlb.New(w, opts), cc: w}
}

// sinkCC passes everything to gRPC's ClientConn, and copies the states to
// the test's pickerSink when there is one.
type sinkCC struct {
	balancer.ClientConn
	sink atomic.Pointer[pickerSink]
}

func (w *sinkCC) UpdateState(s balancer.State) {
	if sink := w.sink.Load(); sink != nil {
		if sink.onDone != nil && s.Picker != nil {
			s.Picker = doneTap{Picker: s.Picker, onDone: sink.onDone}
		}
		sink.mu.Lock()
		sink.states = append(sink.states, s)
		sink.mu.Unlock()
		xdstest.Notify()
	}
	w.ClientConn.UpdateState(s)
}

type testBalancer struct {
	*clusterlb.Balancer
	cc *sinkCC
}

func (b *testBalancer) UpdateClientConnState(s balancer.ClientConnState) error {
	if sink, ok := s.ResolverState.Attributes.Value(sinkKey{}).(*pickerSink); ok {
		b.cc.sink.Store(sink)
	}
	cfg, _ := s.ResolverState.Attributes.Value(cfgKey{}).(*clusterlb.Config)
	s.BalancerConfig = cfg
	return b.Balancer.UpdateClientConnState(s)
}

// backend is a gRPC server on loopback: the test service, whose UnaryCall
// answers with the backend's name, and the health service. It counts the
// connections it accepts and those still open.
type backend struct {
	name, addr string
	accepted   atomic.Int32
	open       atomic.Int32
	entered    chan struct{} // receives when a blocking call arrives
	release    chan struct{} // closed to let blocking calls return
	failing    atomic.Bool   // UnaryCall fails with UNAVAILABLE while set

	mu    sync.Mutex
	srv   *grpc.Server
	conns []net.Conn // accepted, for drop
}

// startBackend starts a backend named name on a new loopback port.
func startBackend(t testing.TB, name string) *backend {
	t.Helper()
	b := &backend{name: name, entered: make(chan struct{}, 100), release: make(chan struct{})}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b.addr = lis.Addr().String()
	b.serve(lis)
	t.Cleanup(func() {
		b.mu.Lock()
		select {
		case <-b.release:
		default:
			close(b.release)
		}
		b.mu.Unlock()
		b.stop()
	})
	return b
}

func startBackends(t testing.TB, names ...string) []*backend {
	bs := make([]*backend, len(names))
	for i, n := range names {
		bs[i] = startBackend(t, n)
	}
	return bs
}

func (b *backend) serve(lis net.Listener) {
	srv := grpc.NewServer(orca.CallMetricsServerOption(nil))
	testgrpc.RegisterTestServiceServer(srv, testService{b: b})
	healthpb.RegisterHealthServer(srv, health.NewServer())
	b.mu.Lock()
	b.srv = srv
	b.mu.Unlock()
	go func() { _ = srv.Serve(&countingListener{Listener: lis, b: b}) }()
}

// stop closes the listener and every connection.
func (b *backend) stop() {
	b.mu.Lock()
	srv := b.srv
	b.srv = nil
	b.mu.Unlock()
	if srv != nil {
		srv.Stop()
	}
}

// restart serves again on the same address after stop.
func (b *backend) restart(t *testing.T, ctx context.Context) {
	t.Helper()
	for {
		lis, err := net.Listen("tcp", b.addr)
		if err == nil {
			b.serve(lis)
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("listen again on %s: %v", b.addr, err)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// unblock lets the blocked calls return.
func (b *backend) unblock() {
	b.mu.Lock()
	defer b.mu.Unlock()
	select {
	case <-b.release:
	default:
		close(b.release)
	}
}

type testService struct {
	testgrpc.UnimplementedTestServiceServer
	b *backend
}

// blockKey is the metadata key that makes UnaryCall wait for unblock.
const blockKey = "block"

// withBlock returns ctx with the metadata that makes UnaryCall wait.
func withBlock(ctx context.Context) context.Context {
	return metadata.AppendToOutgoingContext(ctx, blockKey, "1")
}

func (s testService) UnaryCall(ctx context.Context, req *testgrpc.SimpleRequest) (*testgrpc.SimpleResponse, error) {
	if md, _ := metadata.FromIncomingContext(ctx); len(md.Get(blockKey)) > 0 {
		s.b.entered <- struct{}{}
		select {
		case <-s.b.release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if s.b.failing.Load() {
		return nil, status.Error(codes.Unavailable, s.b.name+" is failing")
	}
	// Every call reports the ORCA named metric "calls" with value 1.
	orca.CallMetricsRecorderFromContext(ctx).SetNamedMetric("calls", 1)
	if st := req.GetResponseStatus(); st != nil {
		return nil, status.Error(codes.Code(st.GetCode()), st.GetMessage())
	}
	return &testgrpc.SimpleResponse{ServerId: s.b.name}, nil
}

type countingListener struct {
	net.Listener
	b *backend
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.b.accepted.Add(1)
	l.b.open.Add(1)
	cc := &countingConn{Conn: c, b: l.b}
	l.b.mu.Lock()
	l.b.conns = append(l.b.conns, cc)
	l.b.mu.Unlock()
	xdstest.Notify()
	return cc, nil
}

// drop closes every connection the backend accepted, and keeps serving:
// its clients' connections leave READY, and may connect again.
func (b *backend) drop() {
	b.mu.Lock()
	conns := b.conns
	b.conns = nil
	b.mu.Unlock()
	for _, c := range conns {
		c.Close()
	}
}

type countingConn struct {
	net.Conn
	once sync.Once
	b    *backend
}

func (c *countingConn) Close() error {
	c.once.Do(func() {
		c.b.open.Add(-1)
		xdstest.Notify()
	})
	return c.Conn.Close()
}

// blackhole is a loopback listener that accepts connections and never
// answers on them: a gRPC client stays CONNECTING.
type blackhole struct {
	lis   net.Listener
	mu    sync.Mutex
	conns []net.Conn
	done  chan struct{}
}

func startBlackhole(t testing.TB) *blackhole {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := &blackhole{lis: lis, done: make(chan struct{})}
	go func() {
		defer close(h.done)
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			h.mu.Lock()
			h.conns = append(h.conns, c)
			h.mu.Unlock()
			xdstest.Notify()
		}
	}()
	t.Cleanup(func() {
		lis.Close()
		<-h.done
		h.mu.Lock()
		for _, c := range h.conns {
			c.Close()
		}
		h.mu.Unlock()
	})
	return h
}

func (h *blackhole) addr() string { return h.lis.Addr().String() }

func (h *blackhole) accepted() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.conns)
}

// channel is a gRPC ClientConn whose only policy is the Balancer, given
// its Config through a manual resolver.
type channel struct {
	cc *grpc.ClientConn
	r  *manual.Resolver
}

// dial returns a channel balanced by cfg. The reconnection backoff is
// short, so that backends that come back are used again quickly.
func dial(t testing.TB, cfg *clusterlb.Config) *channel { return dialWith(t, cfg, nil) }

// dialWith is dial with a pickerSink (or nil) and more options.
func dialWith(t testing.TB, cfg *clusterlb.Config, sink *pickerSink, opts ...grpc.DialOption) *channel {
	t.Helper()
	r := manual.NewBuilderWithScheme("clusterlb-test")
	r.InitialState(stateOf(cfg, sink))
	opts = append([]grpc.DialOption{
		grpc.WithResolvers(r),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultServiceConfig(`{"loadBalancingConfig": [{"` + testPolicy + `": {}}]}`),
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: 10 * time.Millisecond, Multiplier: 1.2, MaxDelay: 50 * time.Millisecond},
			MinConnectTimeout: 20 * time.Second,
		}),
	}, opts...)
	cc, err := grpc.NewClient(r.Scheme()+":///test", opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return &channel{cc: cc, r: r}
}

func stateOf(cfg *clusterlb.Config, sink *pickerSink) resolver.State {
	attrs := attributes.New(cfgKey{}, cfg)
	if sink != nil {
		attrs = attrs.WithValue(sinkKey{}, sink)
	}
	return resolver.State{Attributes: attrs}
}

// update gives the channel's Balancer a new Config.
func (c *channel) update(cfg *clusterlb.Config) {
	c.r.UpdateState(stateOf(cfg, nil))
}

// call makes one UnaryCall and returns the name of the backend that
// answered it.
func (c *channel) call(ctx context.Context, opts ...grpc.CallOption) (string, error) {
	resp, err := testgrpc.NewTestServiceClient(c.cc).UnaryCall(ctx, &testgrpc.SimpleRequest{}, opts...)
	return resp.GetServerId(), err
}

// mustCall makes a call that waits for a connection and must succeed.
func (c *channel) mustCall(t testing.TB, ctx context.Context) string {
	t.Helper()
	name, err := c.call(ctx, grpc.WaitForReady(true))
	if err != nil {
		t.Fatalf("RPC: %v", err)
	}
	return name
}

// counts makes n calls that must succeed and counts the backends that
// answered them.
func (c *channel) counts(t *testing.T, ctx context.Context, n int) map[string]int {
	t.Helper()
	got := map[string]int{}
	for range n {
		got[c.mustCall(t, ctx)]++
	}
	return got
}

// waitFor makes calls until one is answered by the backend named name.
func (c *channel) waitFor(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	for {
		got, err := c.call(ctx, grpc.WaitForReady(true))
		if got == name {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("no RPC reached %s; last answered by %q, error %v", name, got, err)
		}
	}
}

// edsCluster returns an EDS leaf cluster slot with the given localities.
func edsCluster(name string, locs ...xdsresource.Locality) *xdsconfig.ClusterConfig {
	return &xdsconfig.ClusterConfig{
		Name:           name,
		Cluster:        &xdsresource.Cluster{Name: name, Kind: xdsresource.ClusterEDS, MaxRequests: xdsresource.DefaultMaxRequests},
		Endpoints:      &xdsresource.ClusterLoadAssignment{ClusterName: name, Localities: locs},
		ResolutionNote: "node ID: test-node",
	}
}

// locality returns a locality of zone at priority prio with weight w and
// one endpoint per backend.
func locality(zone string, prio, w uint32, bs ...*backend) xdsresource.Locality {
	addrs := make([]string, len(bs))
	for i, b := range bs {
		addrs[i] = b.addr
	}
	return localityAt(zone, prio, w, addrs...)
}

// localityAt returns a locality of zone at priority prio with weight w and
// one endpoint per address.
func localityAt(zone string, prio, w uint32, addrs ...string) xdsresource.Locality {
	l := xdsresource.Locality{Region: "r", Zone: zone, Weight: w, Priority: prio}
	for _, a := range addrs {
		l.Endpoints = append(l.Endpoints, xdsresource.Endpoint{Addresses: []string{a}, Health: xdsresource.HealthHealthy, Weight: 1})
	}
	return l
}

// config returns the Config of a route-level cluster named name with the
// given leaves.
func config(name string, leaves ...*xdsconfig.ClusterConfig) *clusterlb.Config {
	return &clusterlb.Config{Name: name, Leaves: leaves, FailoverTimeout: 20 * time.Second}
}

// code returns the status code of err and its message.
func code(err error) (codes.Code, string) {
	st, _ := status.FromError(err)
	return st.Code(), st.Message()
}

var errUnreachable = errors.New("unreachable")

func contextWithTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, d)
}
