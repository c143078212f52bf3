package perfbench

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/xdslens/xdslens/internal/xdswatch/demo/controlplane"
	"github.com/xdslens/xdslens/xdsclient"
	"github.com/xdslens/xdslens/xdsclient/bootstrap"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
)

const cdsURL = resourcev3.ClusterType

// The connect timeouts of the two variants of every cluster: an update
// moves a cluster from one to the other.
var timeouts = [2]time.Duration{5 * time.Second, 6 * time.Second}

// waitLimit bounds every wait, so that a broken client fails the run
// instead of hanging it.
const waitLimit = time.Minute

// clusterNames returns c0..cn-1.
func clusterNames(n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = "c" + strconv.Itoa(i)
	}
	return names
}

// clusters returns the EDS clusters c0..cn-1 (EDS over ADS, round robin)
// of the given variant, which sets their connect timeout.
func clusters(n, variant int) []proto.Message {
	out := make([]proto.Message, n)
	for i, name := range clusterNames(n) {
		c := controlplane.Cluster(name, name)
		c.ConnectTimeout = durationpb.New(timeouts[variant])
		out[i] = c
	}
	return out
}

// wireResponse returns a full-state CDS response of the clusters as the
// server encodes it, and its size on the wire.
func wireResponse(tb testing.TB, msgs []proto.Message) []byte {
	tb.Helper()
	resp := &discoveryv3.DiscoveryResponse{VersionInfo: "1", TypeUrl: cdsURL, Nonce: "1"}
	for _, m := range msgs {
		b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
		if err != nil {
			tb.Fatal(err)
		}
		resp.Resources = append(resp.Resources, &anypb.Any{TypeUrl: cdsURL, Value: b})
	}
	wire, err := proto.Marshal(resp)
	if err != nil {
		tb.Fatal(err)
	}
	return wire
}

// env is a go-control-plane server on loopback serving one node, with an
// observer of the CDS requests it receives: a snapshot cache serving both
// protocols, or a linear cache serving delta.
type env struct {
	tb     testing.TB
	ctx    context.Context
	srv    *controlplane.Server
	linear *linearServer
	push   *pushServer
	addr   string
	obs    *observer
	node   string
	n      int
}

// newEnv starts a server that serves n clusters of variant 0 at version
// "1" to node "perf". It stops when tb ends.
func newEnv(tb testing.TB, n int) *env {
	tb.Helper()
	obs := &observer{closed: make(chan struct{}, 64)}
	ctx := context.Background()
	srv, err := controlplane.Start(ctx, "127.0.0.1:0", controlplane.WithCallbacks(obs.callbacks()))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(srv.Stop)
	e := &env{tb: tb, ctx: ctx, srv: srv, addr: srv.Addr(), obs: obs, node: "perf", n: n}
	e.set("1", clusters(n, 0))
	return e
}

// newLinearEnv starts a delta server over a linear cache that holds n
// clusters of variant 0.
func newLinearEnv(tb testing.TB, n int) *env {
	tb.Helper()
	obs := &observer{closed: make(chan struct{}, 64)}
	l := startLinear(tb, obs)
	e := &env{tb: tb, ctx: context.Background(), linear: l, addr: l.addr, obs: obs, node: "perf", n: n}
	l.update(tb, clusters(n, 0))
	return e
}

// newPushEnv starts a delta server that does only the work of what
// changed (pushServer), holding n clusters of variant 0.
func newPushEnv(tb testing.TB, n int) *env {
	tb.Helper()
	obs := &observer{closed: make(chan struct{}, 64)}
	p := startPush(tb, obs)
	p.load(tb, clusters(n, 0))
	return &env{tb: tb, ctx: context.Background(), push: p, addr: p.addr, obs: obs, node: "perf", n: n}
}

// The protocol a client benchmark speaks and the server it speaks to.
type serverKind int

const (
	sotw      serverKind = iota // go-control-plane's snapshot cache, State of the World
	delta                       // go-control-plane's linear cache, delta
	deltaPush                   // pushServer, delta
)

// envFor returns the server of a client benchmark.
func envFor(tb testing.TB, n int, kind serverKind) *env {
	switch kind {
	case delta:
		return newLinearEnv(tb, n)
	case deltaPush:
		return newPushEnv(tb, n)
	}
	return newEnv(tb, n)
}

// incremental reports whether e serves delta: an update then names only
// the clusters that changed, and the server numbers versions itself.
func (e *env) incremental() bool { return e.linear != nil || e.push != nil }

// set replaces the node's configuration with msgs at version (snapshot
// cache), or updates the clusters in msgs (delta servers).
func (e *env) set(version string, msgs []proto.Message) {
	if e.push != nil {
		e.push.update(e.tb, msgs)
		return
	}
	if e.linear != nil {
		e.linear.update(e.tb, msgs)
		return
	}
	if err := e.srv.SetResources(e.ctx, e.node, version, msgs...); err != nil {
		e.tb.Fatal(err)
	}
}

// expectACK returns what waits, once the watchers have the update, until
// the server has the ACK of version. Call it before the update. A delta
// server numbers versions itself: there the wait is for the ACK of the last
// response sent, which the watchers having the update has been.
func (e *env) expectACK(version string) func() {
	if e.incremental() {
		return func() { wait(e.tb, e.obs.settled(), "ACK") }
	}
	acked := e.obs.expectACK(version)
	return func() { wait(e.tb, acked, "ACK") }
}

// newClient returns an xdsclient.Client of the node, talking to the server.
func (e *env) newClient(opts ...xdsclient.Option) *xdsclient.Client {
	cfg, err := bootstrap.Parse(fmt.Appendf(nil,
		`{"xds_servers": [{"server_uri": %q, "channel_creds": [{"type": "insecure"}]}], "node": {"id": %q}}`,
		e.addr, e.node))
	if err != nil {
		e.tb.Fatal(err)
	}
	c, err := xdsclient.New(cfg, append([]xdsclient.Option{xdsclient.WithTarget("perfbench")}, opts...)...)
	if err != nil {
		e.tb.Fatal(err)
	}
	return c
}

// wait waits for ch, failing tb after waitLimit.
func wait(tb testing.TB, ch <-chan struct{}, what string) {
	tb.Helper()
	t := time.NewTimer(waitLimit)
	defer t.Stop()
	select {
	case <-ch:
	case <-t.C:
		tb.Fatalf("no %s within %v", what, waitLimit)
	}
}

// observer counts the CDS requests a server receives and tells when one
// ACKs a given version.
type observer struct {
	requests atomic.Int64
	measure  atomic.Bool   // whether to measure responses
	respSize atomic.Int64  // wire size of the last CDS response measured
	closed   chan struct{} // a value for every stream that ended

	mu         sync.Mutex
	want       string
	acked      chan struct{}
	lastNonce  string        // of the last CDS response sent
	ackedNonce string        // of the last CDS response acknowledged
	settledCh  chan struct{} // closed when ackedNonce catches up with lastNonce
}

func (o *observer) callbacks() controlplane.Callbacks {
	return controlplane.CallbackFuncs{
		StreamRequest: func(_ int64, req *discoveryv3.DiscoveryRequest) error {
			if req.GetTypeUrl() != cdsURL {
				return nil
			}
			o.requests.Add(1)
			if req.GetResponseNonce() == "" || req.GetErrorDetail() != nil {
				return nil
			}
			o.ack(req.GetResponseNonce(), req.GetVersionInfo())
			return nil
		},
		StreamResponse: func(_ context.Context, _ int64, _ *discoveryv3.DiscoveryRequest, resp *discoveryv3.DiscoveryResponse) {
			if resp.GetTypeUrl() != cdsURL {
				return
			}
			o.mu.Lock()
			o.lastNonce = resp.GetNonce()
			o.mu.Unlock()
			if o.measure.Load() {
				o.respSize.Store(int64(proto.Size(resp)))
			}
		},
		// Delta requests carry no version: benchmarks over delta wait for
		// the ACK of the last response sent (settled), not of a version.
		DeltaRequest: func(_ int64, req *discoveryv3.DeltaDiscoveryRequest) error {
			if req.GetTypeUrl() != cdsURL {
				return nil
			}
			o.requests.Add(1)
			if req.GetResponseNonce() == "" || req.GetErrorDetail() != nil {
				return nil
			}
			o.ack(req.GetResponseNonce(), "")
			return nil
		},
		DeltaResponse: func(_ int64, _ *discoveryv3.DeltaDiscoveryRequest, resp *discoveryv3.DeltaDiscoveryResponse) {
			if resp.GetTypeUrl() != cdsURL {
				return
			}
			o.mu.Lock()
			o.lastNonce = resp.GetNonce()
			o.mu.Unlock()
		},
		StreamClosed: func(int64, *corev3.Node) {
			select {
			case o.closed <- struct{}{}:
			default:
			}
		},
	}
}

// ack records the ACK of the response with nonce, at version ("" over
// delta).
func (o *observer) ack(nonce, version string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.ackedNonce = nonce
	if o.settledCh != nil && o.ackedNonce == o.lastNonce {
		close(o.settledCh)
		o.settledCh = nil
	}
	if o.acked != nil && version == o.want {
		close(o.acked)
		o.acked = nil
	}
}

// expectACK returns a channel closed when the server receives an ACK of
// version. Call it before the ACK can be sent.
func (o *observer) expectACK(version string) <-chan struct{} {
	ch := make(chan struct{})
	o.mu.Lock()
	o.want, o.acked = version, ch
	o.mu.Unlock()
	return ch
}

// settled returns a channel closed once the server has received the ACK of
// the last CDS response it sent, so that nothing is in flight.
func (o *observer) settled() <-chan struct{} {
	ch := make(chan struct{})
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.ackedNonce == o.lastNonce {
		close(ch)
		return ch
	}
	o.settledCh = ch
	return ch
}

// fleet is one watcher per cluster. A watcher only counts its callbacks and
// keeps the connect timeout it was last given; the fleet signals when the
// total count reaches a target. It keeps the cancel func of every watch, as
// a user would, so that the heap measured includes them.
type fleet struct {
	total    atomic.Int64
	target   atomic.Int64
	errs     atomic.Int64
	reached  chan struct{}
	watchers []clusterWatcher
	names    []string
	cancels  []func()
}

func newFleet(n int) *fleet {
	f := &fleet{reached: make(chan struct{}, 1), watchers: make([]clusterWatcher, n), names: clusterNames(n), cancels: make([]func(), n)}
	for i := range f.watchers {
		f.watchers[i].f = f
	}
	return f
}

// expect arms the fleet to signal reached after k more callbacks.
func (f *fleet) expect(k int) { f.target.Store(f.total.Load() + int64(k)) }

// watchAll registers one watcher per cluster with c. The watches end when
// c is closed.
func (f *fleet) watchAll(c *xdsclient.Client) {
	for i, name := range f.names {
		f.cancels[i] = xdsclient.WatchCluster(c, name, &f.watchers[i])
	}
}

// check fails tb unless watcher i was notified count[i] times, without
// errors, and holds the connect timeout of variant[i].
func (f *fleet) check(tb testing.TB, count []int, variant []int) {
	tb.Helper()
	if n := f.errs.Load(); n > 0 {
		tb.Fatalf("watchers got %d errors", n)
	}
	bad := 0
	for i := range f.watchers {
		w := &f.watchers[i]
		if got := int(w.notified.Load()); got != count[i] {
			if bad++; bad <= 5 {
				tb.Errorf("watcher %s notified %d times, want %d", f.names[i], got, count[i])
			}
		}
		if got := time.Duration(w.timeout.Load()); got != timeouts[variant[i]] {
			if bad++; bad <= 5 {
				tb.Errorf("watcher %s has connect timeout %v, want %v", f.names[i], got, timeouts[variant[i]])
			}
		}
	}
	if bad > 0 {
		tb.FailNow()
	}
}

// clusterWatcher is one watcher of the fleet.
type clusterWatcher struct {
	f        *fleet
	notified atomic.Int64
	timeout  atomic.Int64
}

func (w *clusterWatcher) ResourceChanged(c *xdsresource.Cluster, err error) {
	if err != nil {
		w.f.errs.Add(1)
	} else {
		w.timeout.Store(int64(c.ConnectTimeout))
	}
	w.notified.Add(1)
	if w.f.total.Add(1) == w.f.target.Load() {
		select {
		case w.f.reached <- struct{}{}:
		default:
		}
	}
}

func (w *clusterWatcher) AmbientError(error) { w.f.errs.Add(1) }

// rawADS is the raw-ADS floor: a bare ADS stream made with the generated
// gRPC client that subscribes once to every name, then only receives,
// unpacks every resource into a Cluster and ACKs.
type rawADS struct {
	cc     *grpc.ClientConn
	stream discoveryv3.AggregatedDiscoveryService_StreamAggregatedResourcesClient
	cancel context.CancelFunc
	names  []string
}

// dial returns a channel to e's server, for the floors.
func (e *env) dial() *grpc.ClientConn {
	// A response of 100,000 clusters is larger than gRPC's default limit.
	cc, err := grpc.NewClient(e.addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(1<<30)))
	if err != nil {
		e.tb.Fatal(err)
	}
	return cc
}

// dialRaw opens a raw ADS stream to e's server and subscribes to names.
func (e *env) dialRaw(names []string) *rawADS {
	cc := e.dial()
	ctx, cancel := context.WithCancel(e.ctx)
	r := &rawADS{cc: cc, cancel: cancel, names: names}
	var err error
	r.stream, err = discoveryv3.NewAggregatedDiscoveryServiceClient(cc).StreamAggregatedResources(ctx)
	if err == nil {
		err = r.stream.Send(&discoveryv3.DiscoveryRequest{Node: &corev3.Node{Id: e.node}, TypeUrl: cdsURL, ResourceNames: names})
	}
	if err != nil {
		r.close()
		e.tb.Fatal(err)
	}
	return r
}

// receive reads one response, unpacks every resource and ACKs it. It
// returns how many resources the response carried.
func (r *rawADS) receive(tb testing.TB) int {
	resp, err := r.stream.Recv()
	if err != nil {
		tb.Fatal(err)
	}
	for _, a := range resp.GetResources() {
		c := new(clusterv3.Cluster)
		if err := a.UnmarshalTo(c); err != nil {
			tb.Fatal(err)
		}
	}
	err = r.stream.Send(&discoveryv3.DiscoveryRequest{
		TypeUrl: cdsURL, VersionInfo: resp.GetVersionInfo(), ResponseNonce: resp.GetNonce(), ResourceNames: r.names,
	})
	if err != nil {
		tb.Fatal(err)
	}
	return len(resp.GetResources())
}

func (r *rawADS) close() {
	r.cancel()
	r.cc.Close()
}
