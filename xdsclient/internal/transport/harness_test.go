package transport_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdslens/xdslens/internal/xdswatch/demo/controlplane"
	"github.com/xdslens/xdslens/xdsclient/bootstrap"
	"github.com/xdslens/xdslens/xdsclient/internal/transport"
	"github.com/xdslens/xdslens/xdsclient/internal/transport/transporttest"
)

const (
	cdsURL = "type.googleapis.com/envoy.config.cluster.v3.Cluster"
	ldsURL = "type.googleapis.com/envoy.config.listener.v3.Listener"
	edsURL = "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment"
)

// The rank of each type: requests of lower rank go first on a new stream.
var rank = map[string]int{ldsURL: 0, cdsURL: 2, edsURL: 3}

// sending is one Handler.Sending call.
type sending struct {
	id      uint64
	typeURL string
	names   []string
	resumed bool
}

// response is one Handler.Response call.
type response struct {
	id uint64
	u  *transport.Update
}

// ended is one Handler.StreamEnded call.
type ended struct {
	id uint64
	e  transport.End
}

// handler is a transport.Handler that records what it is told, each kind
// of event on its own channel, and answers Versions and Response as the
// test sets.
type handler struct {
	states    chan connectivity.State
	started   chan uint64
	sendings  chan sending
	sent      chan transport.Request
	responses chan response
	ended     chan ended

	// subMu is the lock Subscribe and Unsubscribe are called with, held
	// while Requests builds: subs is what is subscribed, by type URL, in
	// the order of subscribing (the names a State of the World request
	// names).
	subMu sync.Mutex
	subs  map[string][]string

	mu sync.Mutex
	// versions answers Versions, by type URL.
	versions map[string]map[string]string
	// result answers Response; nil ACKs every resource.
	result func(u *transport.Update) transport.Result
}

func newHandler() *handler {
	const n = 256
	return &handler{states: make(chan connectivity.State, n), started: make(chan uint64, n), sendings: make(chan sending, n),
		sent: make(chan transport.Request, n), responses: make(chan response, n), ended: make(chan ended, n)}
}

func (h *handler) Connectivity(s connectivity.State) { h.states <- s }
func (h *handler) StreamStarted(id uint64)           { h.started <- id }
func (h *handler) Requests(_ uint64, build func(names func(typeURL string) []string)) {
	h.subMu.Lock()
	defer h.subMu.Unlock()
	build(func(typeURL string) []string { return h.subs[typeURL] })
}
func (h *handler) Versions(_ uint64, typeURL string) map[string]string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.versions[typeURL]
}
func (h *handler) Sending(id uint64, typeURL string, names []string, resumed bool) {
	h.sendings <- sending{id, typeURL, append([]string(nil), names...), resumed}
}
func (h *handler) Sent(_ uint64, r transport.Request) { h.sent <- r }
func (h *handler) Response(id uint64, u *transport.Update) transport.Result {
	h.responses <- response{id, u}
	h.mu.Lock()
	f := h.result
	h.mu.Unlock()
	if f == nil {
		return transport.Result{Valid: len(u.Resources)}
	}
	return f(u)
}
func (h *handler) StreamEnded(id uint64, e transport.End) { h.ended <- ended{id, e} }

// setResult makes f answer Response from now on.
func (h *handler) setResult(f func(u *transport.Update) transport.Result) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.result = f
}

// setVersions makes Versions answer v for typeURL from now on.
func (h *handler) setVersions(typeURL string, v map[string]string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.versions == nil {
		h.versions = map[string]map[string]string{}
	}
	h.versions[typeURL] = v
}

// next returns the next value of ch, failing t if none comes.
func next[T any](t testing.TB, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(transporttest.Timeout):
		t.Fatalf("no %s within %v", what, transporttest.Timeout)
	}
	var zero T
	return zero
}

// rig is a Conn to an in-memory server, and what its handler heard.
type rig struct {
	conn *transport.Conn
	srv  *transporttest.Server
	h    *handler
	// backoffs are the retries Config.Backoff was asked about, in order.
	backoffs chan int
	// close closes the Conn and waits for its goroutines to end.
	close func()
}

// option changes the Config of a rig's Conn.
type option func(*transport.Config)

// newRig makes a Conn (over delta if delta) to an in-memory server. Its
// backoff is 1ms per retry after the first (0 for the first), its
// MinStreamInterval 0; opts change that. The Conn closes, and its
// goroutines end, with the test.
func newRig(t *testing.T, delta bool, opts ...option) *rig {
	t.Helper()
	var (
		net transporttest.Network
		wg  sync.WaitGroup
	)
	r := &rig{h: newHandler(), backoffs: make(chan int, 256)}
	cfg := transport.Config{
		Server: &bootstrap.ServerConfig{URI: "xds.test:443"},
		Delta:  delta,
		Node:   &corev3.Node{Id: "node-1"},
		Backoff: func(retries int) time.Duration {
			r.backoffs <- retries
			return time.Duration(retries) * time.Millisecond
		},
		Group: &wg,
		Dial:  net.Dial,
	}
	for _, o := range opts {
		o(&cfg)
	}
	ctx, cancel := context.WithCancel(context.Background())
	conn, err := transport.New(ctx, cfg, r.h)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	r.close = sync.OnceFunc(func() {
		conn.Close()
		cancel()
		wg.Wait()
	})
	t.Cleanup(r.close)
	r.conn, r.srv = conn, net.Server(cfg.Server.URI)
	return r
}

// subscribe subscribes names of typeURL, and records them in the
// handler, as the client does in its cache.
func (r *rig) subscribe(typeURL string, names ...string) {
	h := r.h
	h.subMu.Lock()
	defer h.subMu.Unlock()
	if h.subs == nil {
		h.subs = map[string][]string{}
	}
	for _, name := range names {
		h.subs[typeURL] = append(slices.Clip(h.subs[typeURL]), name)
		r.conn.Subscribe(typeURL, rank[typeURL], name)
	}
}

// unsubscribe unsubscribes names of typeURL, and forgets them in the
// handler.
func (r *rig) unsubscribe(typeURL string, names ...string) {
	h := r.h
	h.subMu.Lock()
	defer h.subMu.Unlock()
	for _, name := range names {
		h.subs[typeURL] = slices.DeleteFunc(slices.Clone(h.subs[typeURL]), func(n string) bool { return n == name })
		r.conn.Unsubscribe(typeURL, name)
	}
}

// sentNames is the Conn's SentNames of typeURL, with the names the
// handler holds.
func (r *rig) sentNames(typeURL string) []string {
	r.h.subMu.Lock()
	defer r.h.subMu.Unlock()
	return r.conn.SentNames(typeURL, r.h.subs[typeURL])
}

// clusters returns Anys of the clusters named.
func clusters(t testing.TB, names ...string) []*anypb.Any {
	t.Helper()
	out := make([]*anypb.Any, len(names))
	for i, name := range names {
		a, err := anypb.New(controlplane.Cluster(name, ""))
		if err != nil {
			t.Fatal(err)
		}
		out[i] = a
	}
	return out
}

// sotwResponse is a State of the World response of typeURL.
func sotwResponse(typeURL, version, nonce string, resources ...*anypb.Any) *discoveryv3.DiscoveryResponse {
	return &discoveryv3.DiscoveryResponse{TypeUrl: typeURL, VersionInfo: version, Nonce: nonce, Resources: resources}
}

// deltaResponse is a delta response of typeURL with the resources given
// (each at version), and removed.
func deltaResponse(typeURL, nonce, version string, resources []*anypb.Any, names []string, removed ...string) *discoveryv3.DeltaDiscoveryResponse {
	resp := &discoveryv3.DeltaDiscoveryResponse{TypeUrl: typeURL, Nonce: nonce, RemovedResources: removed}
	for i, a := range resources {
		resp.Resources = append(resp.Resources, &discoveryv3.Resource{Name: names[i], Version: version, Resource: a})
	}
	return resp
}

// req is a request of either protocol, as a test that runs over both
// reads it: its type, the names it subscribes, its nonce.
type req struct {
	typeURL string
	names   []string
	nonce   string
}

// anyRequest reads the next request of st, of st's protocol.
func anyRequest(t testing.TB, st *transporttest.Stream) req {
	t.Helper()
	if st.Delta {
		r := st.DeltaRequest(t)
		return req{r.GetTypeUrl(), r.GetResourceNamesSubscribe(), r.GetResponseNonce()}
	}
	r := st.Request(t)
	return req{r.GetTypeUrl(), r.GetResourceNames(), r.GetResponseNonce()}
}
