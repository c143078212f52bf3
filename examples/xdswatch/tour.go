package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	statuspb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"github.com/xdslens/xdslens/internal/controlplane"
	"github.com/xdslens/xdslens/xdsclient"
	"github.com/xdslens/xdslens/xdsclient/bootstrap"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
)

// Names and versions of the demo tour.
const (
	// tourCluster is the demo cluster the tour breaks and repairs.
	tourCluster = demoListener + "-cluster"
	// tourMissing is a cluster no server has, watched on the primary.
	tourMissing = "tour-missing"
	// tourTimeout is a cluster no server has, watched on the secondary.
	tourTimeout = "tour-timeout"
	// tourTP3Version is the version whose CDS response carries a TP3 error
	// for tourCluster.
	tourTP3Version = "5"
	// tourFallbackVersion is the version the secondary serves.
	tourFallbackVersion = "fallback-1"
	// defaultTourStep is how long the tour shows each state.
	defaultTourStep = 3 * time.Second
	// minTourWait bounds from below how long the tour waits for the client
	// to show a step's effect before it says so and moves on.
	minTourWait = 30 * time.Second
	// rebindWait bounds how long the primary's address may stay busy
	// when the primary comes back.
	rebindWait = 5 * time.Second
)

// tourDemo is the demo control plane of the tour: the primary server of
// startDemo, which the tour stops and starts again on the same address, and
// a secondary server that the bootstrap lists second.
type tourDemo struct {
	*demo
	secondary *controlplane.Server
	// base is the demo configuration of version 1.
	base []proto.Message

	mu      sync.Mutex // guards primary
	primary *controlplane.Server
}

// startTourDemo starts the demo's primary server, which adds a TP3 error to
// the CDS response of version tourTP3Version, and a secondary server
// serving the demo configuration at version tourFallbackVersion with
// resource_timer_is_transient_error. The bootstrap lists both.
func startTourDemo(ctx context.Context) (*tourDemo, error) {
	d, err := startDemo(ctx, tourCallbacks())
	if err != nil {
		return nil, err
	}
	td := &tourDemo{demo: d, primary: d.srv, base: controlplane.DemoResources(demoListener)}
	td.stop = td.stopServers
	secondary, err := controlplane.Start(ctx, "127.0.0.1:0", controlplane.WithDefaultNode())
	if err != nil {
		td.stop()
		return nil, err
	}
	td.secondary = secondary
	if err := secondary.SetResources(ctx, "", tourFallbackVersion, td.base...); err != nil {
		td.stop()
		return nil, err
	}
	td.bootstrap, err = bootstrap.Parse(demoBootstrapJSON(
		demoServer{URI: d.addr},
		demoServer{URI: secondary.Addr(), Features: []string{bootstrap.FeatureResourceTimerIsTransientError}},
	))
	if err != nil {
		td.stop()
		return nil, err
	}
	return td, nil
}

// tourCallbacks returns the primary server's callbacks: the CDS response
// of version tourTP3Version carries an xRFC TP3 error for tourCluster, which
// go-control-plane cannot send by itself; and a NACK waits for the next
// version. go-control-plane answers a NACK at once with the version it
// still holds, which the client rejects again, in a loop as fast as the
// two can go; the callbacks make a NACK read as if it named the version it
// rejects, so the server sends nothing until the configuration changes.
func tourCallbacks() controlplane.Option {
	var (
		mu   sync.Mutex
		sent = map[int64]map[string]string{} // stream ID → type URL → last version sent
	)
	return controlplane.WithCallbacks(controlplane.CallbackFuncs{
		StreamRequest: func(id int64, req *discoveryv3.DiscoveryRequest) error {
			if req.GetErrorDetail() == nil {
				return nil
			}
			mu.Lock()
			defer mu.Unlock()
			if v, ok := sent[id][req.GetTypeUrl()]; ok {
				req.VersionInfo = v
			}
			return nil
		},
		StreamResponse: func(_ context.Context, id int64, _ *discoveryv3.DiscoveryRequest, resp *discoveryv3.DiscoveryResponse) {
			mu.Lock()
			if sent[id] == nil {
				sent[id] = map[string]string{}
			}
			sent[id][resp.GetTypeUrl()] = resp.GetVersionInfo()
			mu.Unlock()
			if resp.GetTypeUrl() != xdsresource.ClusterType.TypeURL() || resp.GetVersionInfo() != tourTP3Version {
				return
			}
			resp.ResourceErrors = []*discoveryv3.ResourceError{{
				ResourceName: &discoveryv3.ResourceName{Name: tourCluster},
				ErrorDetail: &statuspb.Status{
					Code:    int32(codes.Unavailable),
					Message: "demo control plane: the backend that computes cluster " + tourCluster + " is down",
				},
			}}
		},
		StreamClosed: func(id int64, _ *corev3.Node) {
			mu.Lock()
			delete(sent, id)
			mu.Unlock()
		},
	})
}

// stopServers stops both servers.
func (td *tourDemo) stopServers() {
	td.stopPrimary()
	if td.secondary != nil {
		td.secondary.Stop()
	}
}

// currentPrimary returns the primary server last started.
func (td *tourDemo) currentPrimary() *controlplane.Server {
	td.mu.Lock()
	defer td.mu.Unlock()
	return td.primary
}

// setPrimary serves resources at version on the primary.
func (td *tourDemo) setPrimary(ctx context.Context, version string, resources []proto.Message) error {
	return td.currentPrimary().SetResources(ctx, "", version, resources...)
}

// stopPrimary takes the primary away: its streams end and its port
// refuses connections.
func (td *tourDemo) stopPrimary() { td.currentPrimary().Stop() }

// restartPrimary starts the primary again on its address, with the
// options it started with (LRS and the tour's callbacks), serving
// resources at version.
func (td *tourDemo) restartPrimary(ctx context.Context, version string, resources []proto.Message) error {
	ctx, cancel := context.WithTimeout(ctx, rebindWait)
	defer cancel()
	var srv *controlplane.Server
	retry := time.NewTicker(50 * time.Millisecond)
	defer retry.Stop()
	for {
		var err error
		srv, err = controlplane.Start(ctx, td.addr, demoServerOptions(tourCallbacks())...)
		if err == nil {
			break
		}
		// The system may hold the port for a moment after the stop; a
		// bind is not an event anyone can wait on, so it is retried.
		select {
		case <-ctx.Done():
			return fmt.Errorf("primary server back on %s: %w", td.addr, err)
		case <-retry.C:
		}
	}
	td.mu.Lock()
	td.primary = srv
	td.mu.Unlock()
	return srv.SetResources(ctx, "", version, resources...)
}

// The tour's configurations, derived from the demo's of version 1.

// withCluster returns base with the cluster named name replaced by c, or
// left out when c is nil.
func withCluster(base []proto.Message, name string, c *clusterv3.Cluster) []proto.Message {
	out := make([]proto.Message, 0, len(base))
	for _, m := range base {
		if old, ok := m.(*clusterv3.Cluster); ok && old.GetName() == name {
			if c != nil {
				out = append(out, c)
			}
			continue
		}
		out = append(out, m)
	}
	return out
}

// withOneEndpoint returns base with the endpoints of clusterName cut down
// to their first endpoint.
func withOneEndpoint(base []proto.Message, clusterName string) []proto.Message {
	out := make([]proto.Message, 0, len(base))
	for _, m := range base {
		if cla, ok := m.(*endpointv3.ClusterLoadAssignment); ok && cla.GetClusterName() == clusterName {
			cla = proto.Clone(cla).(*endpointv3.ClusterLoadAssignment)
			for _, loc := range cla.GetEndpoints() {
				loc.LbEndpoints = loc.LbEndpoints[:min(1, len(loc.LbEndpoints))]
			}
			m = cla
		}
		out = append(out, m)
	}
	return out
}

// unsupportedCluster is a cluster gRPC rejects: STATIC is not a type it
// supports.
func unsupportedCluster(name string) *clusterv3.Cluster {
	return &clusterv3.Cluster{Name: name, ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_STATIC}}
}

// tourStep is one step of the tour: what it does to the control plane or
// the watches, and what the client shows once it took effect.
type tourStep struct {
	title string
	// what is printed when the step starts.
	what string
	// act makes the change; nil for none.
	act func(ctx context.Context) error
	// goals are what the client shows afterwards, in order; each is
	// printed when reached, and the last is held for one step interval.
	goals []tourGoal
}

// tourGoal is a state of the client that a step leads to.
type tourGoal struct {
	desc string
	met  func(v *tourView) bool
	// typ and name are those of the entry a goal made by is reads.
	typ  xdsresource.Type
	name string
}

// tourView is what a goal reads: the client's cache entries and whether
// it is connected to each server.
type tourView struct {
	entries   map[string]xdsclient.EntrySnapshot // by type URL + " " + name
	connected map[string]bool                    // by server URI
}

// entry returns the cache entry of typ and name.
func (v *tourView) entry(typ xdsresource.Type, name string) (xdsclient.EntrySnapshot, bool) {
	e, ok := v.entries[typ.TypeURL()+" "+name]
	return e, ok
}

// is returns a goal met when the entry of typ and name is in state; with
// version set, it must hold a resource of that version.
func is(typ xdsresource.Type, name string, state xdsclient.CacheState, version string) tourGoal {
	desc := fmt.Sprintf("%s %s %s", typeLabel(typ), name, state)
	if version != "" {
		desc += fmt.Sprintf(", using version %s", version)
	}
	return tourGoal{desc: desc, typ: typ, name: name, met: func(v *tourView) bool {
		e, ok := v.entry(typ, name)
		return ok && e.State == state && (version == "" || (e.Cached && e.Version == version))
	}}
}

// from narrows g, a goal made by is, to its entry holding a resource that
// came from server.
func (g tourGoal) from(server, label string) tourGoal {
	met := g.met
	narrowed := g
	narrowed.desc += ", from the " + label + " server " + server
	narrowed.met = func(v *tourView) bool {
		e, ok := v.entry(g.typ, g.name)
		return met(v) && ok && e.ResourceServer == server
	}
	return narrowed
}

// tour walks the demo control plane through the cases of gRFC A88 and
// A71, printing each step, and waits at each step until the client shows
// its effect.
type tour struct {
	demo   *tourDemo
	client *xdsclient.Client
	step   time.Duration
	// timeout is the client's base does-not-exist timer.
	timeout time.Duration
	out     io.Writer
	// watch asks the main loop to run a watch command (+TYPE:NAME).
	watch chan<- string

	changed chan struct{} // receives a value after each client event

	mu        sync.Mutex // guards connected
	connected map[string]bool
}

// runTour starts the tour in a goroutine. It sends watch commands on
// watch, which the caller must keep reading until the returned func, which
// ends the tour and waits for it, has returned.
func runTour(ctx context.Context, d *tourDemo, client *xdsclient.Client, step, timeout time.Duration, out io.Writer, watch chan<- string) (stop func()) {
	t := &tour{
		demo: d, client: client, step: step, timeout: timeout, out: out, watch: watch,
		changed:   make(chan struct{}, 1),
		connected: map[string]bool{},
	}
	poke := func() {
		select {
		case t.changed <- struct{}{}:
		default:
		}
	}
	removeHooks := client.AddHooks(&xdsclient.Hooks{
		CacheStateChanged:      func(xdsclient.CacheStateInfo) { poke() },
		ResponseReceived:       func(xdsclient.ResponseInfo) { poke() },
		AuthorityServerChanged: func(xdsclient.AuthorityServerInfo) { poke() },
		ConnectedChanged: func(i xdsclient.ConnectedInfo) {
			t.mu.Lock()
			t.connected[i.Server] = i.Connected
			t.mu.Unlock()
			poke()
		},
	})
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t.run(ctx)
	}()
	return func() {
		cancel()
		<-done
		removeHooks()
	}
}

// steps returns the tour.
func (t *tour) steps() []tourStep {
	d := t.demo
	primary, secondary := d.addr, d.secondary.Addr()
	v2 := withOneEndpoint(d.base, tourCluster)
	serve := func(version string, resources []proto.Message) func(context.Context) error {
		return func(ctx context.Context) error { return d.setPrimary(ctx, version, resources) }
	}
	cds, eds, lds := xdsresource.ClusterType, xdsresource.EndpointsType, xdsresource.ListenerType
	return []tourStep{{
		title: "start",
		what:  "the client subscribes to the demo's listener, route configuration, cluster and endpoints (REQUESTED) on the primary server, which answers with version 1",
		goals: []tourGoal{{
			desc: "every demo resource ACKED, using version 1",
			met: func(v *tourView) bool {
				for _, s := range d.specs {
					if e, ok := v.entry(s.typ, s.name); !ok || e.State != xdsclient.StateACKed || e.Version != demoVersion {
						return false
					}
				}
				return true
			},
		}},
	}, {
		title: "version update",
		what:  "version 2 takes one of the two endpoints out of " + tourCluster,
		act:   serve("2", v2),
		goals: []tourGoal{is(eds, tourCluster, xdsclient.StateACKed, "2")},
	}, {
		title: "NACK",
		what:  "version 3 makes cluster " + tourCluster + " STATIC, a type gRPC does not support: the client rejects it (NACK) and keeps version 2",
		act:   serve("3", withCluster(v2, tourCluster, unsupportedCluster(tourCluster))),
		goals: []tourGoal{is(cds, tourCluster, xdsclient.StateNACKed, "2")},
	}, {
		title: "ignored deletion",
		what:  "version 4 leaves cluster " + tourCluster + " out: gRFC A88 keeps a deleted cluster in use and tells its watchers NOT_FOUND as an ambient error",
		act:   serve("4", withCluster(v2, tourCluster, nil)),
		goals: []tourGoal{is(cds, tourCluster, xdsclient.StateDoesNotExist, "2")},
	}, {
		title: "TP3 error",
		what:  "version " + tourTP3Version + " answers cluster " + tourCluster + " with an UNAVAILABLE error in resource_errors (xRFC TP3): the client keeps the cluster and reports the error",
		act:   serve(tourTP3Version, withCluster(v2, tourCluster, nil)),
		goals: []tourGoal{is(cds, tourCluster, xdsclient.StateReceivedError, "2")},
	}, {
		title: "does-not-exist",
		what:  fmt.Sprintf("a new watch of cds %s, which the server does not have: REQUESTED until the does-not-exist timer fires (after --resource-timeout, %v)", tourMissing, t.timeout),
		act:   t.watchCmd("+cds:" + tourMissing),
		goals: []tourGoal{
			is(cds, tourMissing, xdsclient.StateRequested, ""),
			is(cds, tourMissing, xdsclient.StateDoesNotExist, ""),
		},
	}, {
		title: "recovery",
		what:  "version 6 serves cluster " + tourCluster + " again: ACKED, and its watchers hear that the error is over",
		act:   serve("6", v2),
		goals: []tourGoal{is(cds, tourCluster, xdsclient.StateACKed, "6")},
	}, {
		title: "fallback",
		what: "the primary server goes away; with every watched resource cached the client stays with it (gRFC A71), so a new watch of cds " + tourTimeout +
			" makes it fall back to the secondary server, which serves version " + tourFallbackVersion + " and declares resource_timer_is_transient_error",
		act: func(ctx context.Context) error {
			d.stopPrimary()
			if err := t.await(ctx, tourGoal{desc: "the client lost the primary server", met: func(v *tourView) bool {
				return !v.connected[primary]
			}}); err != nil {
				return err
			}
			return t.watchCmd("+cds:" + tourTimeout)(ctx)
		},
		goals: []tourGoal{
			is(lds, demoListener, xdsclient.StateACKed, tourFallbackVersion).from(secondary, "secondary"),
			is(cds, tourTimeout, xdsclient.StateTimeout, ""),
		},
	}, {
		title: "switch back",
		what:  "the primary server comes back with version 7: once the client reconnects (gRPC's reconnect backoff may take a few seconds) it switches back to the primary and closes the secondary's channel",
		act: func(ctx context.Context) error {
			return d.restartPrimary(ctx, "7", v2)
		},
		goals: []tourGoal{is(lds, demoListener, xdsclient.StateACKed, "7").from(primary, "primary")},
	}}
}

// watchCmd returns an act that has the main loop run cmd.
func (t *tour) watchCmd(cmd string) func(context.Context) error {
	return func(ctx context.Context) error {
		select {
		case t.watch <- cmd:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// run walks the steps until the end or until ctx is done.
func (t *tour) run(ctx context.Context) {
	steps := t.steps()
	for i, s := range steps {
		t.say("tour %d/%d %s: %s", i+1, len(steps), s.title, s.what)
		if s.act != nil {
			if err := s.act(ctx); err != nil {
				if ctx.Err() == nil {
					t.say("tour %d/%d %s: %v; the tour ends here", i+1, len(steps), s.title, err)
				}
				return
			}
		}
		for _, g := range s.goals {
			err := t.await(ctx, g)
			if ctx.Err() != nil {
				return
			}
			if err != nil {
				t.say("tour %d/%d not reached: %v", i+1, len(steps), err)
				continue
			}
			t.say("tour %d/%d reached: %s", i+1, len(steps), g.desc)
		}
		hold := time.NewTimer(t.step)
		select {
		case <-hold.C:
		case <-ctx.Done():
			hold.Stop()
			return
		}
	}
	t.say("tour over: every cache state was shown; xdswatch keeps watching (Ctrl-C ends it)")
}

// await waits until g is met, until ctx is done, or for a bound long
// enough for the slowest step (the does-not-exist timers and gRPC's
// reconnect backoff), in which case it returns an error naming g.
func (t *tour) await(ctx context.Context, g tourGoal) error {
	limit := time.NewTimer(max(minTourWait, 4*t.timeout, 10*t.step))
	defer limit.Stop()
	for {
		if g.met(t.view()) {
			return nil
		}
		select {
		case <-t.changed:
		case <-limit.C:
			return fmt.Errorf("%s: not seen", g.desc)
		case <-ctx.Done():
			return errors.New("tour stopped")
		}
	}
}

// view reads the client's state.
func (t *tour) view() *tourView {
	v := &tourView{entries: map[string]xdsclient.EntrySnapshot{}, connected: map[string]bool{}}
	for _, e := range t.client.Dump() {
		v.entries[e.TypeURL+" "+e.Name] = e
	}
	t.mu.Lock()
	for s, c := range t.connected {
		v.connected[s] = c
	}
	t.mu.Unlock()
	return v
}

// say prints one line on t.out.
func (t *tour) say(format string, args ...any) {
	fmt.Fprintf(t.out, "xdswatch: %s\n", oneLine(fmt.Sprintf(format, args...)))
}
