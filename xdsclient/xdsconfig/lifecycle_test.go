package xdsconfig_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/grpc/codes"

	"github.com/xdslens/xdslens/internal/testing/xdstest"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/controlplane"
	"github.com/xdslens/xdslens/xdsclient/xdsconfig"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
)

// resolver is a DNS resolver whose answers the test sets; it counts
// lookups and wakes xdstest.WaitFor on each.
type resolver struct {
	mu      sync.Mutex
	answers map[string][]string
	err     error
	at      []time.Time
	lookups atomic.Int32
}

// times returns when each lookup happened.
func (r *resolver) times() []time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.at)
}

func (r *resolver) set(host string, addrs []string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.answers == nil {
		r.answers = map[string][]string{}
	}
	r.answers[host], r.err = addrs, err
}

func (r *resolver) LookupHost(_ context.Context, host string) ([]string, error) {
	defer xdstest.Notify()
	defer r.lookups.Add(1)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.at = append(r.at, time.Now())
	if r.err != nil {
		return nil, r.err
	}
	return r.answers[host], nil
}

// serveDNS serves listener L → inline route → LOGICAL_DNS cluster D of
// backend.example.com:8080.
func (f *scripted) serveDNS() {
	f.T.Helper()
	f.stream("L")
	f.Push(ldsURL, controlplane.ListenerInlineRoute("L", controlplane.RouteConfig("inline", []string{"*"}, "D")))
	f.Want(cdsURL, "D")
	f.Push(cdsURL, logicalDNS("D", "backend.example.com", 8080))
}

func TestLogicalDNS(t *testing.T) {
	res := &resolver{}
	res.set("backend.example.com", []string{"10.0.0.1", "10.0.0.2", "10.0.0.1"}, nil)
	f := newScripted(t, nil)
	m, r := start(t, f.c, "L", "svc", xdsconfig.WithResolver(res), xdsconfig.WithDNSMinInterval(0),
		xdsconfig.WithDNSBackoff(func(int) time.Duration { return time.Hour }))
	f.serveDNS()
	c := r.config()
	if got := addrs(c.Clusters["D"]); !slices.Equal(got, []string{"10.0.0.1:8080", "10.0.0.2:8080"}) {
		t.Errorf("addresses %v, want each resolved address once, with the port", got)
	}
	checkNodeNote(t, c, "D")

	// ResolveNow resolves again; new addresses are a new config.
	res.set("backend.example.com", []string{"10.0.0.3"}, nil)
	m.ResolveNow()
	if got := addrs(r.config().Clusters["D"]); !slices.Equal(got, []string{"10.0.0.3:8080"}) {
		t.Errorf("addresses after ResolveNow %v", got)
	}

	// A failure leaves the cluster without endpoints, and says why.
	res.set("backend.example.com", nil, errors.New("no such host"))
	m.ResolveNow()
	c = r.config()
	if s := c.Clusters["D"]; !s.IsLeaf() || s.Endpoints != nil {
		t.Errorf("slot after a failure %+v, want a leaf without endpoints", s)
	}
	checkNote(t, c, "D", `DNS resolution failed for "backend.example.com:8080": no such host`, nodeMark)

	// Ambient errors of the listener reach a LOGICAL_DNS cluster's note too
	// (gRFC A88).
	f.Remove(ldsURL, "L")
	checkNote(t, r.config(), "D", `LDS resource "L"`, "DNS resolution failed")
}

// Resolution goes on: after a failure with backoff, after a success every
// refresh interval.
func TestLogicalDNSRetriesAndRefresh(t *testing.T) {
	res := &resolver{}
	res.set("backend.example.com", nil, errors.New("temporary"))
	f := newScripted(t, nil)
	var retries atomic.Int32
	_, r := start(t, f.c, "L", "svc", xdsconfig.WithResolver(res), xdsconfig.WithDNSRefreshInterval(time.Millisecond),
		xdsconfig.WithDNSBackoff(func(n int) time.Duration { retries.Store(int32(n + 1)); return time.Millisecond }))
	f.serveDNS()
	checkNote(t, r.config(), "D", "temporary")
	xdstest.WaitFor(t, ctx(t), "three retries", func() bool { return retries.Load() >= 3 })
	res.set("backend.example.com", []string{"10.0.0.1"}, nil)
	r.until("the addresses", func(c *xdsconfig.Config) bool { return len(addrs(c.Clusters["D"])) == 1 })
	n := res.lookups.Load()
	xdstest.WaitFor(t, ctx(t), "refreshes", func() bool { return res.lookups.Load() >= n+3 })
}

// ResolveNow within the minimum interval waits for it, and several
// requests meanwhile make one resolution.
func TestLogicalDNSMinInterval(t *testing.T) {
	const minInterval = 100 * time.Millisecond
	res := &resolver{}
	res.set("backend.example.com", []string{"10.0.0.1"}, nil)
	f := newScripted(t, nil)
	m, r := start(t, f.c, "L", "svc", xdsconfig.WithResolver(res), xdsconfig.WithDNSMinInterval(minInterval))
	f.serveDNS()
	r.config()
	m.ResolveNow()
	m.ResolveNow()
	m.ResolveNow()
	xdstest.WaitFor(t, ctx(t), "a second lookup", func() bool { return res.lookups.Load() >= 2 })
	// As in gRPC C-core, the interval counts from when the manager began
	// the first lookup, a moment before the resolver sees it (a goroutine
	// switch, under -race and load sometimes a millisecond or more): the
	// gap the resolver sees is the interval less that moment. Without the
	// rule the requests would be carried out at once.
	times := res.times()
	if gap := times[1].Sub(times[0]); gap < minInterval/2 {
		t.Errorf("second lookup %v after the first, want about %v", gap, minInterval)
	}
	// The manager stops while another request waits: nothing leaks
	// (TestMain checks).
	m.ResolveNow()
}

// Stop from inside Update returns, and no further call comes.
func TestStopFromUpdate(t *testing.T) {
	f := newCP(t)
	f.set("1",
		controlplane.Listener("L", "R"),
		controlplane.RouteConfig("R", []string{"*"}, "C"),
		controlplane.Cluster("C", ""), controlplane.Endpoints("C", "127.0.0.1:1"))
	r := &recorder{t: t, ch: make(chan event, 100)}
	var m *xdsconfig.Manager
	ready := make(chan struct{})
	r.onUpdate = func(*xdsconfig.Config) {
		<-ready
		m.Stop()
		r.stopped.Store(true)
	}
	m = xdsconfig.Watch(f.c, "L", "svc", r)
	close(ready)
	r.config()
	m.Stop() // again, from outside: returns
	f.set("2",
		controlplane.Listener("L", "R"),
		controlplane.RouteConfig("R", []string{"*"}, "C"),
		controlplane.Cluster("C", ""), controlplane.Endpoints("C", "127.0.0.1:2"))
	xdstest.WaitFor(t, ctx(t), "the watches cancelled", func() bool { return len(f.c.Dump()) == 0 })
}

// Stop while configs flow (DNS answers that change every millisecond):
// once it returns, the Watcher gets nothing and no goroutine of the
// manager is left.
func TestStopWhileConfigsFlow(t *testing.T) {
	res := &flappingResolver{}
	f := newScripted(t, nil)
	// The client's goroutines are there before the manager's.
	warm := f.c.Watch(xdsresource.ListenerType, "warm-up", xdstest.NewWatcher())
	f.St = f.NextStream()
	f.Want(ldsURL, "warm-up")
	ignore := goleak.IgnoreCurrent()

	r := &recorder{t: t, ch: make(chan event)}
	m := xdsconfig.Watch(f.c, "L", "svc", r, xdsconfig.WithResolver(res), xdsconfig.WithDNSRefreshInterval(time.Microsecond))
	f.Want(ldsURL, "L", "warm-up")
	f.Push(ldsURL, controlplane.ListenerInlineRoute("L", controlplane.RouteConfig("inline", []string{"*"}, "D")))
	f.Want(cdsURL, "D")
	f.Push(cdsURL, logicalDNS("D", "backend.example.com", 8080))
	for range 5 {
		r.config()
	}
	drained := make(chan struct{})
	go func() { // takes what comes until Stop returns
		defer close(drained)
		for range r.ch {
		}
	}()
	m.Stop()
	r.stopped.Store(true)
	close(r.ch) // a call after this panics the test
	<-drained
	if err := goleak.Find(ignore); err != nil {
		t.Error(err)
	}
	warm()
}

// flappingResolver answers each lookup with another address.
type flappingResolver struct{ n atomic.Int32 }

func (r *flappingResolver) LookupHost(context.Context, string) ([]string, error) {
	return []string{fmt.Sprintf("10.0.0.%d", r.n.Add(1)%250+1)}, nil
}

// A closed client: the listener cannot be watched, the config fails.
func TestWatchClosedClient(t *testing.T) {
	f := newScripted(t, nil)
	f.c.Close()
	_, r := start(t, f.c, "L", "svc")
	err := r.failure()
	configError(t, err, "LDS", "L", codes.Unavailable, "closed")
	if !strings.Contains(err.Error(), nodeMark) {
		t.Errorf("error %q does not name the node", err)
	}
}
