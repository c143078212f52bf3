package authority_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdslens/xdslens/internal/testing/xdstest"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/controlplane"
	"github.com/xdslens/xdslens/xdsclient/bootstrap"
	"github.com/xdslens/xdslens/xdsclient/internal/authority"
	"github.com/xdslens/xdslens/xdsclient/internal/cache"
	"github.com/xdslens/xdslens/xdsclient/internal/lane"
	"github.com/xdslens/xdslens/xdsclient/internal/transport"
	"github.com/xdslens/xdslens/xdsclient/internal/transport/transporttest"
	"github.com/xdslens/xdslens/xdsclient/internal/txn"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
)

// The servers of the rigs' bootstraps, in priority order.
const (
	primary   = "primary.test:443"
	secondary = "secondary.test:443"
	third     = "third.test:443"
)

var cdsURL = xdsresource.ClusterType.TypeURL()

// switched is one AuthorityServer event.
type switched struct {
	authority, server, prev string
	priority                int
}

// note is one watcher callback: a resource (from server), or an error
// with its code, ambient or not.
type note struct {
	name    string
	res     bool
	server  string // of a resource
	code    codes.Code
	ambient bool
	// msg is the error's message; a note a row wants has part of it, or
	// nothing.
	msg string
}

func (n note) String() string {
	switch {
	case n.res:
		return fmt.Sprintf("%s: resource from %s", n.name, n.server)
	case n.ambient:
		return fmt.Sprintf("%s: ambient %v", n.name, n.code)
	}
	return fmt.Sprintf("%s: error %v", n.name, n.code)
}

// events is the Observer of the authorities and the cache: it records
// the switches of authorities, the servers' failures, channels closed and
// log lines.
type events struct {
	switches chan switched
	failures chan string
	closed   chan string
	logs     chan string
	timers   chan string // "start NAME on URI", "stop NAME on URI"
}

func newEvents() *events {
	const n = 256
	return &events{switches: make(chan switched, n), failures: make(chan string, n), closed: make(chan string, n), logs: make(chan string, n), timers: make(chan string, n)}
}

func (r *events) AuthorityServer(_ *txn.Tx, _ *authority.Server, a *authority.Authority, s *authority.Server, prev string, priority int, _ string) {
	sw := switched{authority: a.Name(), prev: prev, priority: priority}
	if s != nil {
		sw.server = s.URI()
	}
	r.switches <- sw
}
func (r *events) ServerFailure(_ *txn.Tx, s *authority.Server, _ error) { r.failures <- s.URI() }
func (r *events) ChannelClosed(_ *txn.Tx, s *authority.Server, _ error) { r.closed <- s.URI() }
func (r *events) Log(_ *txn.Tx, s *authority.Server, _ slog.Level, msg string, _ ...any) {
	r.logs <- s.URI() + ": " + msg
}
func (*events) Connectivity(*txn.Tx, *authority.Server, connectivity.State)              {}
func (*events) Connected(*txn.Tx, *authority.Server, bool, error)                        {}
func (*events) StreamStarted(*txn.Tx, *authority.Server, int)                            {}
func (*events) StreamEnded(*txn.Tx, *authority.Server, bool, bool, error, time.Duration) {}
func (*events) RequestSent(*txn.Tx, *authority.Server, transport.Request)                {}
func (*events) StateChanged(*txn.Tx, *cache.Entry, cache.State, bool)                    {}
func (r *events) TimerStarted(_ *txn.Tx, e *cache.Entry, src *cache.Source) {
	r.timers <- "start " + e.Name() + " on " + src.URI
}
func (r *events) TimerStopped(_ *txn.Tx, e *cache.Entry, src *cache.Source) {
	r.timers <- "stop " + e.Name() + " on " + src.URI
}
func (*events) Logged(*txn.Tx, *cache.Entry, *cache.Source, cache.Log, string)              {}
func (*events) Applied(*txn.Tx, *cache.Source, string, string, string, bool, cache.Applied) {}

// rig is a client's authorities and cache over in-memory servers, as
// package xdsclient wires them, with every cluster watched once.
type rig struct {
	t       *testing.T
	mu      txn.Mutex
	c       *cache.Cache
	as      *authority.Authorities
	k       *cache.Kind
	net     transporttest.Network
	ev      *events
	notes   chan note
	watches map[string]*cache.Watcher
	streams map[string]*transporttest.Stream // the last accepted, by server
}

// setup is what a rig is made with.
type setup struct {
	servers     []string // primary.test, secondary.test, third.test if none
	noFallback  bool
	delta       bool
	timeout     time.Duration // the does-not-exist timer, an hour if 0
	authorities string        // the bootstrap's authorities, as JSON
}

func newRig(t *testing.T, s setup) *rig {
	t.Helper()
	if s.servers == nil {
		s.servers = []string{primary, secondary, third}
	}
	if s.timeout == 0 {
		s.timeout = time.Hour
	}
	cfg, err := bootstrap.Parse([]byte(xdstest.Bootstrap{Servers: s.servers, Node: `{"id": "n"}`, Authorities: s.authorities}.JSON()))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var (
		wg    sync.WaitGroup
		lanes lane.Set
	)
	r := &rig{t: t, ev: newEvents(), notes: make(chan note, 256), watches: map[string]*cache.Watcher{}, streams: map[string]*transporttest.Stream{}}
	r.c = cache.New(cache.Config{Mutex: &r.mu, NodeID: "n", Observer: r.ev,
		Deliver: func(int) func(int, cache.Delivery) any { return func(_ int, d cache.Delivery) any { return d } }})
	r.as = authority.New(authority.Config{
		Mutex: &r.mu, Cache: r.c, Bootstrap: cfg, Fallback: !s.noFallback,
		Transport: transport.Config{Node: &corev3.Node{Id: "n"}, Backoff: func(int) time.Duration { return 0 }, Group: &wg, Dial: r.net.Dial},
		Delta:     func(*bootstrap.ServerConfig) bool { return s.delta }, ResourceTimeout: s.timeout,
		DecodeOptions: func(*bootstrap.ServerConfig) xdsresource.DecodeOptions { return xdsresource.DecodeOptions{} },
		Context:       ctx, Lanes: &lanes, Deliver: r.deliver, Observer: r.ev,
	})
	t.Cleanup(func() {
		tx := r.mu.Lock()
		r.as.Close(tx, errors.New("test over"))
		tx.Unlock()
		cancel()
		wg.Wait()
		lanes.Wait()
	})
	tx := r.mu.Lock()
	defer tx.Unlock()
	if r.k, err = r.c.Register(tx, cache.Describe(xdsresource.ClusterType)); err != nil {
		t.Fatal(err)
	}
	return r
}

// deliver is the lanes' callback: a note for the test.
func (r *rig) deliver(w *cache.Watcher, payload any, err error, ambient bool) {
	n := note{name: w.Sink.(string), code: status.Code(err), ambient: ambient}
	if err != nil {
		n.msg = err.Error()
	}
	if d, ok := payload.(cache.Delivery); ok {
		n.res, n.server = true, d.Server
	}
	r.notes <- n
}

// watch watches the cluster name, as package xdsclient's Watch does.
func (r *rig) watch(name string) {
	r.t.Helper()
	tx := r.mu.Lock()
	defer tx.Unlock()
	a, err := r.as.Get(tx, name)
	if err != nil {
		r.t.Fatalf("authority of %s: %v", name, err)
	}
	e := r.c.Get(tx, r.k, name)
	if e == nil {
		e = r.c.Add(tx, r.k, name, a.Group())
		r.as.Subscribe(tx, a, e)
	}
	w := &cache.Watcher{Sink: name}
	r.c.Watch(tx, e, w, nil, nil, r.as.Down(tx, a))
	r.watches[name] = w
}

// cancel cancels the watch of name, as package xdsclient does.
func (r *rig) cancel(name string) {
	tx := r.mu.Lock()
	defer tx.Unlock()
	w := r.watches[name]
	w.Cancel()
	if r.c.Unwatch(tx, w) {
		e := w.Entry()
		a := r.as.Of(tx, e.Group())
		r.c.Remove(tx, e)
		r.as.Unsubscribe(tx, a, e)
	}
}

// active returns the URI of the server that the authority of name uses,
// and its priority.
func (r *rig) active(name string) (string, int) {
	r.t.Helper()
	tx := r.mu.Lock()
	defer tx.Unlock()
	a, err := r.as.Get(tx, name)
	if err != nil {
		r.t.Fatal(err)
	}
	s, prio := a.Active(tx)
	return s.URI(), prio
}

// settled returns once every event told so far under the lock is over:
// what one holding of the lock does is seen whole.
func (r *rig) settled() {
	tx := r.mu.Lock()
	tx.Unlock()
}

// A step is one step of a row.
type step func(r *rig)

func watch(names ...string) step {
	return func(r *rig) {
		for _, n := range names {
			r.watch(n)
		}
	}
}

func cancelWatch(name string) step { return func(r *rig) { r.cancel(name) } }

// accept lets the next stream to uri open.
func accept(uri string) step {
	return func(r *rig) {
		r.t.Helper()
		r.streams[uri] = r.net.Server(uri).Accept(r.t)
	}
}

// refuse fails the next stream attempt to uri.
func refuse(uri string) step {
	return func(r *rig) {
		r.t.Helper()
		r.net.Server(uri).Refuse(r.t, status.Error(codes.Unavailable, uri+" unreachable"))
	}
}

// refuseDials makes the channels to uri fail to be made.
func refuseDials(uri string) step {
	return func(r *rig) { r.net.Server(uri).RefuseDials(errors.New("no channel to " + uri)) }
}

// endStream ends the current stream of uri from the server.
func endStream(uri string) step {
	return func(r *rig) { r.streams[uri].End(status.Error(codes.Unavailable, uri+" going away")) }
}

// wantRequest reads the next request on uri's stream: it must subscribe
// names (in any order) over State of the World; over delta, its
// resource_names_subscribe, and versions its initial_resource_versions.
func wantRequest(uri string, names ...string) step {
	return func(r *rig) {
		r.t.Helper()
		st := r.streams[uri]
		var got []string
		if st.Delta {
			got = st.DeltaRequest(r.t).GetResourceNamesSubscribe()
		} else {
			got = st.Request(r.t).GetResourceNames()
		}
		got, names = slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(names))
		if !slices.Equal(got, names) {
			r.t.Fatalf("request to %s subscribes %v, want %v", uri, got, names)
		}
	}
}

// wantResumed reads the next delta request on uri's stream and checks its
// initial_resource_versions.
func wantResumed(uri string, versions map[string]string) step {
	return func(r *rig) {
		r.t.Helper()
		got := r.streams[uri].DeltaRequest(r.t).GetInitialResourceVersions()
		if len(got) != len(versions) {
			r.t.Fatalf("first delta request to %s carries versions %v, want %v", uri, got, versions)
		}
		for name, v := range versions {
			if got[name] != v {
				r.t.Fatalf("first delta request to %s carries versions %v, want %v", uri, got, versions)
			}
		}
	}
}

// serve has uri send version of the clusters named (valid), or of none,
// and reads the ACK.
func serve(uri, version string, names ...string) step {
	return respond(uri, version, false, names...)
}

// serveInvalid is serve with clusters that fail validation: a NACK.
func serveInvalid(uri, version string, names ...string) step {
	return respond(uri, version, true, names...)
}

func respond(uri, version string, invalid bool, names ...string) step {
	return func(r *rig) {
		r.t.Helper()
		st := r.streams[uri]
		nonce := uri + "/" + version
		var anys []*anypb.Any
		for _, name := range names {
			var m proto.Message = controlplane.Cluster(name, "")
			if invalid {
				m = &clusterv3.Cluster{Name: name, ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_STATIC}}
			}
			a, err := anypb.New(m)
			if err != nil {
				r.t.Fatal(err)
			}
			anys = append(anys, a)
		}
		if st.Delta {
			resp := &discoveryv3.DeltaDiscoveryResponse{TypeUrl: cdsURL, SystemVersionInfo: version, Nonce: nonce}
			for i, a := range anys {
				resp.Resources = append(resp.Resources, &discoveryv3.Resource{Name: names[i], Version: version, Resource: a})
			}
			st.Respond(r.t, resp)
			if got := st.DeltaRequest(r.t).GetResponseNonce(); got != nonce {
				r.t.Fatalf("request after the response of %s: nonce %q, want the ACK of %q", uri, got, nonce)
			}
			return
		}
		st.Respond(r.t, &discoveryv3.DiscoveryResponse{TypeUrl: cdsURL, VersionInfo: version, Nonce: nonce, Resources: anys})
		if got := st.Request(r.t).GetResponseNonce(); got != nonce {
			r.t.Fatalf("request after the response of %s: nonce %q, want the ACK of %q", uri, got, nonce)
		}
	}
}

// wantSwitch checks the next switch of an authority: to server uri
// ("" when released) at priority.
func wantSwitch(uri string, priority int) step {
	return func(r *rig) {
		r.t.Helper()
		select {
		case sw := <-r.ev.switches:
			if sw.server != uri || sw.priority != priority {
				r.t.Fatalf("authority %s switched to %q at priority %d (from %q), want %q at %d", sw.authority, sw.server, sw.priority, sw.prev, uri, priority)
			}
		case <-time.After(transporttest.Timeout):
			r.t.Fatalf("no switch to %q", uri)
		}
	}
}

// noSwitch checks that no authority switched servers.
func noSwitch() step {
	return func(r *rig) {
		r.t.Helper()
		r.settled()
		if len(r.ev.switches) > 0 {
			sw := <-r.ev.switches
			r.t.Fatalf("authority %s switched to %q at priority %d, want no switch", sw.authority, sw.server, sw.priority)
		}
	}
}

// wantFailure checks the next server failure: uri's.
func wantFailure(uri string) step {
	return func(r *rig) {
		r.t.Helper()
		select {
		case got := <-r.ev.failures:
			if got != uri {
				r.t.Fatalf("server failure of %s, want %s", got, uri)
			}
			r.settled()
		case <-time.After(transporttest.Timeout):
			r.t.Fatalf("no server failure of %s", uri)
		}
	}
}

// wantActive checks the server the authority of name uses.
func wantActive(name, uri string, priority int) step {
	return func(r *rig) {
		r.t.Helper()
		if got, prio := r.active(name); got != uri || prio != priority {
			r.t.Fatalf("%s's authority uses %s at priority %d, want %s at %d", name, got, prio, uri, priority)
		}
	}
}

// wantChannels checks how many channels to uri were made and are open,
// waiting for a channel being closed.
func wantChannels(uri string, made, open int) step {
	return func(r *rig) {
		r.t.Helper()
		srv := r.net.Server(uri)
		srv.WaitFor(r.t, fmt.Sprintf("%d channels made, %d open", made, open), func() bool {
			m, o := srv.Dials()
			return m == made && o == open
		})
	}
}

// setState makes the channels to uri report state.
func setState(uri string, state connectivity.State) step {
	return func(r *rig) { r.net.Server(uri).SetState(state) }
}

// wantTimers checks the does-not-exist timers started and stopped since
// the last check ("start c1 on primary.test:443"), in any order: the
// names of a State of the World request come in the cache's order.
func wantTimers(want ...string) step {
	return func(r *rig) {
		r.t.Helper()
		var got []string
		for len(got) < len(want) {
			select {
			case s := <-r.ev.timers:
				got = append(got, s)
				continue
			case <-time.After(transporttest.Timeout):
			}
			break
		}
		r.settled()
		for len(r.ev.timers) > 0 {
			got = append(got, <-r.ev.timers)
		}
		if !slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(want))) {
			r.t.Fatalf("timers %q, want %q", got, want)
		}
	}
}

// wantNote checks the next watcher callback.
func wantNote(want note) step {
	return func(r *rig) {
		r.t.Helper()
		select {
		case got := <-r.notes:
			msg := got.msg
			got.msg = want.msg
			if got != want || !strings.Contains(msg, want.msg) {
				r.t.Fatalf("watcher heard %v (%q), want %v (with %q)", got, msg, want, want.msg)
			}
		case <-time.After(transporttest.Timeout):
			r.t.Fatalf("watcher heard nothing, want %v", want)
		}
	}
}

// wantLog checks that a log line has been written that has part in it.
func wantLog(part string) step {
	return func(r *rig) {
		r.t.Helper()
		r.settled()
		for len(r.ev.logs) > 0 {
			if strings.Contains(<-r.ev.logs, part) {
				return
			}
		}
		r.t.Fatalf("no log line with %q", part)
	}
}

// quiet checks that no watcher hears anything for a while: what a rule
// says watchers must not be told.
func quiet() step {
	return func(r *rig) {
		r.t.Helper()
		select {
		case n := <-r.notes:
			r.t.Fatalf("watcher heard %v, want nothing", n)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// resource, failed and ambient are the notes of the rows.
func resource(name, server string) note { return note{name: name, res: true, server: server} }
func failed(name string, code codes.Code) note {
	return note{name: name, code: code}
}

// saying is n with part of its error's message.
func (n note) saying(part string) note          { n.msg = part; return n }
func ambient(name string, code codes.Code) note { return note{name: name, code: code, ambient: true} }
