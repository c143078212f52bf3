package demo

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"github.com/xdslens/xdslens/xdsclient"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
	"github.com/xdslens/xdslens/xdsserver"
)

// tourView is what a goal reads: the client's cache entries, whether it
// is connected to each server, and the last RPC through Target.
type tourView struct {
	entries   map[Key]xdsclient.EntrySnapshot
	connected map[string]bool // by server URI
	rpc       *RPC            // nil until one ended
	// serving is the mode of each address of the demo's xDS-enabled
	// server.
	serving map[string]xdsserver.Mode
	// ejected counts the endpoints ejected in the channel to Target.
	ejected int
}

// tour walks the demo control plane through the cases of gRFC A88 and
// A71, printing each step, and waits at each step until the client shows
// what the step announced.
type tour struct {
	demo *tourDemo
	// specs are the demo's resources, which the client watches from the
	// start.
	specs  []Resource
	client *xdsclient.Client
	// server is the demo's xDS-enabled server, on serverAddr.
	server     *xdsserver.Server
	serverAddr string
	step       time.Duration
	// timeout is the client's base does-not-exist timer.
	timeout time.Duration
	// say prints one line.
	say func(line string)
	// watch asks the main loop to run a watch command (+TYPE:NAME).
	watch chan<- string

	changed chan struct{} // receives a value after each client event and RPC

	mu        sync.Mutex // guards connected, lastRPC and ejected
	connected map[string]bool
	lastRPC   *RPC
	// ejected says, by address, whether outlier detection has ejected an
	// endpoint in the channel to Target.
	ejected map[string]bool
}

// TourEnv is what the tour runs with: the program around the demo.
type TourEnv struct {
	// Client is the client that watches the demo's resources and routes
	// Target.
	Client *xdsclient.Client
	// Server is the demo's xDS-enabled server, serving the first address
	// the demo was started with.
	Server *xdsserver.Server
	// Step is how long the tour holds each state it reached; Timeout is
	// the client's base does-not-exist timer.
	Step, Timeout time.Duration
	// Say prints one line of the tour, for people.
	Say func(line string)
	// Watch takes the watch commands (+TYPE:NAME) the tour asks the
	// program to run.
	Watch chan<- string
	// ObserveRPCs has f called with the outcome of every RPC of the
	// program's channels from now on, until the returned func is called.
	ObserveRPCs func(f func(RPC)) (remove func())
	// ObserveEjections has f called with every ejection and return of
	// outlier detection in the program's channels from now on, until the
	// returned func is called.
	ObserveEjections func(f func(Ejection)) (remove func())
}

// RunTour starts the tour in a goroutine: it walks the demo control plane
// through the cases of gRFC A88 and A71, its xDS-enabled server through
// RBAC and serving modes, and a failing backend through outlier detection,
// retries and faults, printing each step with env.Say, and waits at each
// step until env.Client (its cache), env.Server (its serving mode), and
// the RPCs and ejections through Target show what the step announced. It sends
// watch commands on env.Watch, which the caller must keep reading until
// the returned func, which ends the tour and waits for it, has returned.
// The demo must have been started with the tour.
func (d *Demo) RunTour(ctx context.Context, env TourEnv) (stop func()) {
	td := d.tour
	client := env.Client
	t := &tour{
		demo: td, specs: td.specs, client: client, server: env.Server, serverAddr: td.serverAddrs[0],
		step: env.Step, timeout: env.Timeout, say: env.Say, watch: env.Watch,
		changed:   make(chan struct{}, 1),
		connected: map[string]bool{},
		ejected:   map[string]bool{},
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
	removeServerHooks := t.server.AddHooks(&xdsserver.Hooks{ServingModeChanged: func(xdsserver.ServingModeChange) { poke() }})
	removeObserver := env.ObserveRPCs(func(r RPC) {
		if r.Target != Target {
			return
		}
		t.mu.Lock()
		t.lastRPC = &r
		t.mu.Unlock()
		poke()
	})
	removeEjections := env.ObserveEjections(func(e Ejection) {
		if e.Target != Target {
			return
		}
		t.mu.Lock()
		t.ejected[e.Address] = e.Ejected
		t.mu.Unlock()
		poke()
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
		removeObserver()
		removeEjections()
		removeServerHooks()
		removeHooks()
	}
}

// steps returns the tour. The goals depend on t.specs and t.timeout
// alone; the acts run against t.demo.
func (t *tour) steps() []Step {
	serve := func(version string, config func(base []proto.Message) []proto.Message) func(context.Context) error {
		return func(ctx context.Context) error { return t.demo.setPrimary(ctx, version, config(t.demo.base)) }
	}
	cds := xdsresource.ClusterType
	ok := RPCGoal{Code: codes.OK}
	goal := func(c Cache, r RPCGoal) Goal { return Goal{Cache: c, RPC: r} }
	at := func(version string, from Role) Cache { return allAt(t.specs, version, from) }
	// The entries the tour adds stay as they are once they have been
	// shown: only REQUESTED entries are retried or timed.
	missing := empty(xdsclient.StateDoesNotExist)
	timedOut := empty(xdsclient.StateTimeout)
	steps := []Step{{
		Title: "start",
		what: "the client subscribes (REQUESTED) to the demo's resources on the primary server, which serves them at version 1: " +
			"listener demo, route configuration demo-route, cluster " + Cluster + " (its load reported to the server that sent it: lrs_server self; " +
			"xdswatch keeps that load report stream open), its endpoints (the demo's two backends), and the Listener of the demo's xDS-enabled server on " + t.serverAddr +
			" (mTLS and RBAC), which then serves (SERVING); xdswatch routes a channel to " + Target + " by them, whose RPCs succeed",
		Goals: []Goal{servingGoal(at(version1, Primary), xdsserver.ModeServing)},
	}, {
		Title: "version update",
		what:  "version 2 takes one of the two endpoints out of " + Cluster + "; every other resource stays as it was, now at version 2; RPCs succeed",
		act:   serve("2", tourConfig),
		Goals: []Goal{goal(at("2", Primary), ok)},
	}, {
		Title: "NACK",
		what: "version 3 makes cluster " + Cluster + " STATIC, a type gRPC does not support: the client rejects it (NACK) and keeps version 2; " +
			"every other resource stays as it was, now at version 3; RPCs keep succeeding on version 2 of the cluster",
		act: serve("3", func(base []proto.Message) []proto.Message {
			return withCluster(tourConfig(base), Cluster, unsupportedCluster(Cluster))
		}),
		Goals: []Goal{goal(at("3", Primary).with(cds, Cluster, held(xdsclient.StateNACKed, "2", Primary)), ok)},
	}, {
		Title: "ignored deletion",
		what: "version 4 leaves cluster " + Cluster + " out: gRFC A88 keeps a deleted cluster in use and tells its watchers NOT_FOUND as an ambient error; " +
			"every other resource stays as it was, now at version 4; RPCs keep succeeding on the cluster kept",
		act:   serve("4", withoutCluster),
		Goals: []Goal{goal(at("4", Primary).with(cds, Cluster, held(xdsclient.StateDoesNotExist, "2", Primary)), ok)},
	}, {
		Title: "TP3 error",
		what: "version " + tourTP3Version + " answers cluster " + Cluster + " with an UNAVAILABLE error in resource_errors (xRFC TP3): " +
			"the client keeps the cluster and reports the error; every other resource stays as it was, now at version " + tourTP3Version +
			"; RPCs keep succeeding on the cluster kept",
		act:   serve(tourTP3Version, withoutCluster),
		Goals: []Goal{goal(at(tourTP3Version, Primary).with(cds, Cluster, held(xdsclient.StateReceivedError, "2", Primary)), ok)},
	}, {
		Title: "does-not-exist",
		what: fmt.Sprintf("version 6 serves cluster %s again, as version 2 had it (ACKED: its watchers hear that the error is over), "+
			"and has route demo-route send every RPC to cluster %s, which no server has: the client asks for it (REQUESTED) "+
			"and RPCs keep going to %s until its does-not-exist timer fires (after --resource-timeout, %v), since a route is used only "+
			"once every cluster it names has been heard from (gRFC A74); then %s is DOES_NOT_EXIST and RPCs fail UNAVAILABLE, "+
			"naming cds %s and the node ID; every other resource stays as it was, now at version 6",
			Cluster, tourMissing, Cluster, t.timeout, tourMissing, tourMissing),
		act: serve("6", func(base []proto.Message) []proto.Message { return withRoute(tourConfig(base), tourMissing) }),
		Goals: []Goal{
			goal(at("6", Primary).with(cds, tourMissing, empty(xdsclient.StateRequested)), ok),
			goal(at("6", Primary).with(cds, tourMissing, missing),
				RPCGoal{Code: codes.Unavailable, Names: []string{strconv.Quote(tourMissing), strconv.Quote(NodeID)}}),
		},
	}, {
		Title: "recovery",
		what: "version 7 has route demo-route send RPCs to cluster " + Cluster + " again: RPCs succeed, and the client no longer " +
			"subscribes to " + tourMissing + ", which nothing uses any more; every other resource stays as it was, now at version 7",
		act:   serve("7", tourConfig),
		Goals: []Goal{goal(at("7", Primary), ok)},
	}, {
		Title: "fallback",
		what: "the primary server goes away: every watcher hears UNAVAILABLE once and keeps what it has, RPCs keep succeeding on the cached resources, " +
			"and the load report stream to the primary fails: the client logs its first failure as a warning and retries with backoff. " +
			"With every watched resource cached the client stays with the primary (gRFC A71), so a new watch of cds " + TimeoutCluster +
			" makes it fall back to the secondary server, which serves the same resources as version 7, at version " + tourFallbackVersion +
			", and declares resource_timer_is_transient_error: the client takes every resource from it, RPCs keep succeeding, and " + TimeoutCluster +
			", which the secondary does not have either, times out (TIMEOUT, UNAVAILABLE). " +
			"The channel now has cluster " + Cluster + " from the secondary, so its load (lrs_server self) is reported to the secondary, " +
			"which does not serve LRS: those streams fail UNIMPLEMENTED, the first failure logged as a warning and every one counted " +
			"(xdslens_xds_client_lrs_stream_failures_total; the alert XdsClientLoadReportingFailing fires if no report goes out for minutes), " +
			"and the load recorded meanwhile waits for a stream that works",
		act: func(ctx context.Context) error {
			t.demo.stopPrimary()
			primary := t.demo.addr
			if err := t.await(ctx, "the client lost the primary server", func(v *tourView) bool {
				return !v.connected[primary]
			}); err != nil {
				return err
			}
			return t.watchCmd("+cds:" + TimeoutCluster)(ctx)
		},
		Goals: []Goal{
			goal(at(tourFallbackVersion, Secondary).with(cds, TimeoutCluster, empty(xdsclient.StateRequested)), ok),
			goal(at(tourFallbackVersion, Secondary).with(cds, TimeoutCluster, timedOut), ok),
		},
	}, {
		Title: "switch back",
		what: "the primary server comes back with version 8, the same resources as version 7: once the client reconnects " +
			"(gRPC's reconnect backoff may take a few seconds) it switches back to the primary, takes every resource from it " +
			"and closes the secondary's channel; load reports go to the primary again, and the reporting to the secondary ends " +
			"with the load it could not send; RPCs keep succeeding",
		act: func(ctx context.Context) error {
			return t.demo.restartPrimary(ctx, "8", tourConfig(t.demo.base))
		},
		Goals: []Goal{goal(at("8", Primary).with(cds, TimeoutCluster, timedOut), ok)},
	}}
	steps = append(steps, t.serverSteps(serve)...)
	return append(steps, t.resilienceSteps(serve)...)
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

// goalSeenKey is the key of the context value of WithGoalReached.
type goalSeenKey struct{}

// WithGoalReached returns a context under which RunTour calls f after
// each line that says a goal was reached, and goes on once f has
// returned: a caller that checks each announced state (the command's
// tests) does so while the tour waits, however short the step.
func WithGoalReached(ctx context.Context, f func(context.Context)) context.Context {
	return context.WithValue(ctx, goalSeenKey{}, f)
}

// Plan returns what the tour shows, for a program that checks it against
// what the client shows: the demo's resources, with the demo's
// xDS-enabled server on serverAddr, and the tour's steps with the goals
// each waits for, with timeout as the client's does-not-exist timer.
func Plan(serverAddr string, timeout time.Duration) ([]Resource, []Step, error) {
	specs, err := resourcesOf(config([]string{"127.0.0.1:1", "127.0.0.1:2"}, []string{serverAddr}), "")
	if err != nil {
		return nil, nil, err
	}
	return specs, (&tour{specs: specs, timeout: timeout, serverAddr: serverAddr}).steps(), nil
}

// run walks the steps until the end or until ctx is done.
func (t *tour) run(ctx context.Context) {
	steps := t.steps()
	var shown Cache // what the last goal reached showed
	for i, s := range steps {
		n := fmt.Sprintf("%d/%d", i+1, len(steps))
		t.sayf("tour %s %s: %s", n, s.Title, s.what)
		if s.act != nil {
			if err := s.act(ctx); err != nil {
				if ctx.Err() == nil {
					t.sayf("tour %s %s: %v; the tour ends here", n, s.Title, err)
				}
				return
			}
		}
		for next := 0; next < len(s.Goals); {
			// A goal may be passed before the tour looks (a short
			// does-not-exist timer): a later goal met means the earlier
			// ones were reached on the way.
			var reached int
			err := t.await(ctx, fmt.Sprintf("what step %s announced", n), func(v *tourView) bool {
				for j := len(s.Goals) - 1; j >= next; j-- {
					if t.met(s.Goals[j], v) {
						reached = j
						return true
					}
				}
				return false
			})
			if ctx.Err() != nil {
				return
			}
			if err != nil {
				g := s.Goals[next]
				t.sayf("tour %s not reached: %s%s%s; %v: %v", n, changes(shown, g.Cache, t.specs, t.addr), t.servingText(g), ejectedText(g), g.RPC, err)
				shown = g.Cache
				next++
				continue
			}
			for ; next <= reached; next++ {
				g := s.Goals[next]
				t.sayf("tour %s reached: %s%s%s; %v", n, changes(shown, g.Cache, t.specs, t.addr), t.servingText(g), ejectedText(g), g.RPC)
				shown = g.Cache
				if seen, ok := ctx.Value(goalSeenKey{}).(func(context.Context)); ok {
					seen(ctx)
				}
			}
		}
		hold := time.NewTimer(t.step)
		select {
		case <-hold.C:
		case <-ctx.Done():
			hold.Stop()
			return
		}
	}
	t.sayf("tour over: every cache state, the server's serving modes, outlier detection, retries and faults were shown; xdswatch keeps watching (Ctrl-C ends it)")
}

// met reports whether the client shows g.
func (t *tour) met(g Goal, v *tourView) bool {
	if g.Serving != nil && v.serving[t.serverAddr] != *g.Serving {
		return false
	}
	if g.Ejected != nil && v.ejected != *g.Ejected {
		return false
	}
	return g.Cache.matches(v.entries, t.addr) && g.RPC.Matches(v.rpc)
}

// addr returns the address of the server of role.
func (t *tour) addr(role Role) string {
	switch role {
	case Primary:
		return t.demo.addr
	case Secondary:
		return t.demo.secondary.Addr()
	}
	return ""
}

// await waits until cond holds, until ctx is done, or for a bound long
// enough for the slowest step (the does-not-exist timers and gRPC's
// reconnect backoff), in which case it returns an error naming what, the
// awaited state.
func (t *tour) await(ctx context.Context, what string, cond func(*tourView) bool) error {
	limit := time.NewTimer(max(minTourWait, 4*t.timeout, 10*t.step))
	defer limit.Stop()
	for {
		if cond(t.view()) {
			return nil
		}
		select {
		case <-t.changed:
		case <-limit.C:
			return fmt.Errorf("%s: not seen", what)
		case <-ctx.Done():
			return errors.New("tour stopped")
		}
	}
}

// view reads the client's state.
func (t *tour) view() *tourView {
	v := &tourView{entries: map[Key]xdsclient.EntrySnapshot{}, connected: map[string]bool{}}
	for _, e := range t.client.Dump() {
		v.entries[Key{TypeURL: e.TypeURL, Name: e.Name}] = e
	}
	t.mu.Lock()
	for s, c := range t.connected {
		v.connected[s] = c
	}
	v.rpc = t.lastRPC
	for _, e := range t.ejected {
		if e {
			v.ejected++
		}
	}
	t.mu.Unlock()
	if t.server != nil {
		v.serving = map[string]xdsserver.Mode{}
		for _, m := range t.server.ServingModes() {
			v.serving[m.Address] = m.Mode
		}
	}
	return v
}

// sayf prints one line, made as fmt.Sprintf makes it.
func (t *tour) sayf(format string, args ...any) { t.say(fmt.Sprintf(format, args...)) }
