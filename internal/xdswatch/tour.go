package xdswatch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"github.com/xdslens/xdslens/xdsclient"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
	"github.com/xdslens/xdslens/xdsgrpc"
	"github.com/xdslens/xdslens/xdsserver"
)

// tourStep is one step of the tour: what it does to the control plane or
// the watches, and what the client shows once it took effect.
type tourStep struct {
	title string
	// what is printed when the step starts: everything the step changes.
	what string
	// act makes the change; nil for none.
	act func(ctx context.Context) error
	// goals are what the client shows afterwards, in order; the tour
	// prints each when reached, with what changed since the one before,
	// and holds the last for one step interval.
	goals []tourGoal
}

// tourGoal is what the client shows at one point of the tour: its cache,
// and what the RPCs through tourTarget see.
type tourGoal struct {
	// cache is every entry of the client's cache.
	cache tourCache
	// serving, when set, is the serving mode of the demo's xDS-enabled
	// server.
	serving *xdsserver.Mode
	// rpc is the outcome of the last RPC through tourTarget.
	rpc rpcGoal
	// ejected, when set, is how many endpoints outlier detection has
	// ejected in the channel to tourTarget.
	ejected *int
}

// rpcGoal is the outcome of an RPC the tour announces: its code, and what
// its message names.
type rpcGoal struct {
	code codes.Code
	// names are strings the message contains.
	names []string
	// plain RPCs take one attempt and no fault.
	plain bool
}

// matches reports whether r, the last RPC (nil when none ended yet), is
// what g announces.
func (g rpcGoal) matches(r *rpcResult) bool {
	if r == nil || r.code != g.code || g.plain && (r.attempts > 1 || r.fault != "") {
		return false
	}
	for _, n := range g.names {
		if !strings.Contains(r.message, n) {
			return false
		}
	}
	return true
}

// String describes g for the tour's lines.
func (g rpcGoal) String() string {
	switch {
	case g.code == codes.OK && g.plain:
		return "RPCs through " + tourTarget + " succeed in one attempt, without fault"
	case g.code == codes.OK:
		return "RPCs through " + tourTarget + " succeed"
	}
	return fmt.Sprintf("RPCs through %s fail %s, naming %s", tourTarget, codeName(g.code), strings.Join(g.names, " and "))
}

// tourView is what a goal reads: the client's cache entries, whether it
// is connected to each server, and the last RPC through tourTarget.
type tourView struct {
	entries   map[resourceKey]xdsclient.EntrySnapshot
	connected map[string]bool // by server URI
	rpc       *rpcResult      // nil until one ended
	// serving is the mode of each address of the demo's xDS-enabled
	// server.
	serving map[string]xdsserver.Mode
	// ejected counts the endpoints ejected in the channel to tourTarget.
	ejected int
}

// tour walks the demo control plane through the cases of gRFC A88 and
// A71, printing each step, and waits at each step until the client shows
// what the step announced.
type tour struct {
	demo *tourDemo
	// specs are the demo's resources, which the client watches from the
	// start.
	specs  []spec
	client *xdsclient.Client
	// server is the demo's xDS-enabled server, on serverAddr.
	server     *xdsserver.Server
	serverAddr string
	step       time.Duration
	// timeout is the client's base does-not-exist timer.
	timeout time.Duration
	out     io.Writer
	// watch asks the main loop to run a watch command (+TYPE:NAME).
	watch chan<- string

	changed chan struct{} // receives a value after each client event and RPC

	mu        sync.Mutex // guards connected, lastRPC and ejected
	connected map[string]bool
	lastRPC   *rpcResult
	// ejected says, by address, whether outlier detection has ejected an
	// endpoint in the channel to tourTarget.
	ejected map[string]bool
}

// runTour starts the tour in a goroutine. It reads the outcomes of the RPCs
// of channels through tourTarget, and sends watch commands on watch, which
// the caller must keep reading until the returned func, which ends the
// tour and waits for it, has returned.
func runTour(ctx context.Context, d *tourDemo, client *xdsclient.Client, served *xdsServing, channels *channelSet, step, timeout time.Duration, out io.Writer, watch chan<- string) (stop func()) {
	t := &tour{
		demo: d, specs: d.specs, client: client, server: served.srv, serverAddr: d.serverAddrs[0],
		step: step, timeout: timeout, out: out, watch: watch,
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
	removeObserver := channels.observeRPCs(func(r rpcResult) {
		if r.target != tourTarget {
			return
		}
		t.mu.Lock()
		t.lastRPC = &r
		t.mu.Unlock()
		poke()
	})
	removeEjections := channels.observeEjections(func(target string, i xdsgrpc.EjectionInfo) {
		if target != tourTarget {
			return
		}
		t.mu.Lock()
		t.ejected[i.Address] = i.Ejected
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
func (t *tour) steps() []tourStep {
	serve := func(version string, config func(base []proto.Message) []proto.Message) func(context.Context) error {
		return func(ctx context.Context) error { return t.demo.setPrimary(ctx, version, config(t.demo.base)) }
	}
	cds := xdsresource.ClusterType
	ok := rpcGoal{code: codes.OK}
	goal := func(c tourCache, r rpcGoal) tourGoal { return tourGoal{cache: c, rpc: r} }
	at := func(version string, from serverRole) tourCache { return allAt(t.specs, version, from) }
	// The entries the tour adds stay as they are once they have been
	// shown: only REQUESTED entries are retried or timed.
	missing := empty(xdsclient.StateDoesNotExist)
	timedOut := empty(xdsclient.StateTimeout)
	steps := []tourStep{{
		title: "start",
		what: "the client subscribes (REQUESTED) to the demo's resources on the primary server, which serves them at version 1: " +
			"listener demo, route configuration demo-route, cluster " + tourCluster + " (its load reported to the server that sent it: lrs_server self; " +
			"xdswatch keeps that load report stream open), its endpoints (the demo's two backends), and the Listener of the demo's xDS-enabled server on " + t.serverAddr +
			" (mTLS and RBAC), which then serves (SERVING); xdswatch routes a channel to " + tourTarget + " by them, whose RPCs succeed",
		goals: []tourGoal{servingGoal(at(demoVersion, primaryServer), xdsserver.ModeServing)},
	}, {
		title: "version update",
		what:  "version 2 takes one of the two endpoints out of " + tourCluster + "; every other resource stays as it was, now at version 2; RPCs succeed",
		act:   serve("2", tourConfig),
		goals: []tourGoal{goal(at("2", primaryServer), ok)},
	}, {
		title: "NACK",
		what: "version 3 makes cluster " + tourCluster + " STATIC, a type gRPC does not support: the client rejects it (NACK) and keeps version 2; " +
			"every other resource stays as it was, now at version 3; RPCs keep succeeding on version 2 of the cluster",
		act: serve("3", func(base []proto.Message) []proto.Message {
			return withCluster(tourConfig(base), tourCluster, unsupportedCluster(tourCluster))
		}),
		goals: []tourGoal{goal(at("3", primaryServer).with(cds, tourCluster, held(xdsclient.StateNACKed, "2", primaryServer)), ok)},
	}, {
		title: "ignored deletion",
		what: "version 4 leaves cluster " + tourCluster + " out: gRFC A88 keeps a deleted cluster in use and tells its watchers NOT_FOUND as an ambient error; " +
			"every other resource stays as it was, now at version 4; RPCs keep succeeding on the cluster kept",
		act:   serve("4", withoutCluster),
		goals: []tourGoal{goal(at("4", primaryServer).with(cds, tourCluster, held(xdsclient.StateDoesNotExist, "2", primaryServer)), ok)},
	}, {
		title: "TP3 error",
		what: "version " + tourTP3Version + " answers cluster " + tourCluster + " with an UNAVAILABLE error in resource_errors (xRFC TP3): " +
			"the client keeps the cluster and reports the error; every other resource stays as it was, now at version " + tourTP3Version +
			"; RPCs keep succeeding on the cluster kept",
		act:   serve(tourTP3Version, withoutCluster),
		goals: []tourGoal{goal(at(tourTP3Version, primaryServer).with(cds, tourCluster, held(xdsclient.StateReceivedError, "2", primaryServer)), ok)},
	}, {
		title: "does-not-exist",
		what: fmt.Sprintf("version 6 serves cluster %s again, as version 2 had it (ACKED: its watchers hear that the error is over), "+
			"and has route demo-route send every RPC to cluster %s, which no server has: the client asks for it (REQUESTED) "+
			"and RPCs keep going to %s until its does-not-exist timer fires (after --resource-timeout, %v), since a route is used only "+
			"once every cluster it names has been heard from (gRFC A74); then %s is DOES_NOT_EXIST and RPCs fail UNAVAILABLE, "+
			"naming cds %s and the node ID; every other resource stays as it was, now at version 6",
			tourCluster, tourMissing, tourCluster, t.timeout, tourMissing, tourMissing),
		act: serve("6", func(base []proto.Message) []proto.Message { return withRoute(tourConfig(base), tourMissing) }),
		goals: []tourGoal{
			goal(at("6", primaryServer).with(cds, tourMissing, empty(xdsclient.StateRequested)), ok),
			goal(at("6", primaryServer).with(cds, tourMissing, missing),
				rpcGoal{code: codes.Unavailable, names: []string{strconv.Quote(tourMissing), strconv.Quote(demoNodeID)}}),
		},
	}, {
		title: "recovery",
		what: "version 7 has route demo-route send RPCs to cluster " + tourCluster + " again: RPCs succeed, and the client no longer " +
			"subscribes to " + tourMissing + ", which nothing uses any more; every other resource stays as it was, now at version 7",
		act:   serve("7", tourConfig),
		goals: []tourGoal{goal(at("7", primaryServer), ok)},
	}, {
		title: "fallback",
		what: "the primary server goes away: every watcher hears UNAVAILABLE once and keeps what it has, RPCs keep succeeding on the cached resources, " +
			"and the load report stream to the primary fails: the client logs its first failure as a warning and retries with backoff. " +
			"With every watched resource cached the client stays with the primary (gRFC A71), so a new watch of cds " + tourTimeout +
			" makes it fall back to the secondary server, which serves the same resources as version 7, at version " + tourFallbackVersion +
			", and declares resource_timer_is_transient_error: the client takes every resource from it, RPCs keep succeeding, and " + tourTimeout +
			", which the secondary does not have either, times out (TIMEOUT, UNAVAILABLE). " +
			"The channel now has cluster " + tourCluster + " from the secondary, so its load (lrs_server self) is reported to the secondary, " +
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
			return t.watchCmd("+cds:" + tourTimeout)(ctx)
		},
		goals: []tourGoal{
			goal(at(tourFallbackVersion, secondaryServer).with(cds, tourTimeout, empty(xdsclient.StateRequested)), ok),
			goal(at(tourFallbackVersion, secondaryServer).with(cds, tourTimeout, timedOut), ok),
		},
	}, {
		title: "switch back",
		what: "the primary server comes back with version 8, the same resources as version 7: once the client reconnects " +
			"(gRPC's reconnect backoff may take a few seconds) it switches back to the primary, takes every resource from it " +
			"and closes the secondary's channel; load reports go to the primary again, and the reporting to the secondary ends " +
			"with the load it could not send; RPCs keep succeeding",
		act: func(ctx context.Context) error {
			return t.demo.restartPrimary(ctx, "8", tourConfig(t.demo.base))
		},
		goals: []tourGoal{goal(at("8", primaryServer).with(cds, tourTimeout, timedOut), ok)},
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

// goalSeenKey is the key of a context value that the tour calls, as
// func(context.Context), after each line that says a goal was reached, and
// goes on once it has returned: a caller that checks each announced state
// (this package's tests) does so while the tour waits, however short the
// step.
type goalSeenKey struct{}

// run walks the steps until the end or until ctx is done.
func (t *tour) run(ctx context.Context) {
	steps := t.steps()
	var shown tourCache // what the last goal reached showed
	for i, s := range steps {
		n := fmt.Sprintf("%d/%d", i+1, len(steps))
		t.say("tour %s %s: %s", n, s.title, s.what)
		if s.act != nil {
			if err := s.act(ctx); err != nil {
				if ctx.Err() == nil {
					t.say("tour %s %s: %v; the tour ends here", n, s.title, err)
				}
				return
			}
		}
		for next := 0; next < len(s.goals); {
			// A goal may be passed before the tour looks (a short
			// does-not-exist timer): a later goal met means the earlier
			// ones were reached on the way.
			var reached int
			err := t.await(ctx, fmt.Sprintf("what step %s announced", n), func(v *tourView) bool {
				for j := len(s.goals) - 1; j >= next; j-- {
					if t.met(s.goals[j], v) {
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
				g := s.goals[next]
				t.say("tour %s not reached: %s%s%s; %v: %v", n, changes(shown, g.cache, t.specs, t.addr), t.servingText(g), ejectedText(g), g.rpc, err)
				shown = g.cache
				next++
				continue
			}
			for ; next <= reached; next++ {
				g := s.goals[next]
				t.say("tour %s reached: %s%s%s; %v", n, changes(shown, g.cache, t.specs, t.addr), t.servingText(g), ejectedText(g), g.rpc)
				shown = g.cache
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
	t.say("tour over: every cache state, the server's serving modes, outlier detection, retries and faults were shown; xdswatch keeps watching (Ctrl-C ends it)")
}

// met reports whether the client shows g.
func (t *tour) met(g tourGoal, v *tourView) bool {
	if g.serving != nil && v.serving[t.serverAddr] != *g.serving {
		return false
	}
	if g.ejected != nil && v.ejected != *g.ejected {
		return false
	}
	return g.cache.matches(v.entries, t.addr) && g.rpc.matches(v.rpc)
}

// addr returns the address of the server of role.
func (t *tour) addr(role serverRole) string {
	switch role {
	case primaryServer:
		return t.demo.addr
	case secondaryServer:
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
	v := &tourView{entries: map[resourceKey]xdsclient.EntrySnapshot{}, connected: map[string]bool{}}
	for _, e := range t.client.Dump() {
		v.entries[resourceKey{typeURL: e.TypeURL, name: e.Name}] = e
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

// say prints one line on t.out.
func (t *tour) say(format string, args ...any) {
	fmt.Fprintf(t.out, "xdswatch: %s\n", oneLine(fmt.Sprintf(format, args...)))
}
