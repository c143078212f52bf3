package xdsclient_test

// gRFC A57: failures of the channel and the ADS stream, backoff, and when
// the does-not-exist timer runs.

import (
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/xdslens/xdslens/internal/testing/xdstest"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/controlplane"
	"github.com/xdslens/xdslens/xdsclient"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
)

// A stream that ends after a response is not an error: no watcher callback,
// no server failure, and the next stream starts without backoff.
func TestA57StreamEndAfterResponseIsNotAnError(t *testing.T) {
	var mu sync.Mutex
	var retries []int
	f := newFixture(t, nil, xdsclient.WithBackoff(func(r int) time.Duration {
		mu.Lock()
		retries = append(retries, r)
		mu.Unlock()
		return time.Millisecond
	}))
	rec, st := f.watchCached("c1")
	st.End(nil)
	st2 := f.NextStream()
	f.RecvType(st2, cdsURL)
	f.send(st2, cdsURL, "1", controlplane.Cluster("c1", "c1"))
	f.RecvType(st2, cdsURL) // ACK of the unchanged resource
	rec.ExpectNone(t)
	if n := len(f.hooks.failures.snapshot()); n != 0 {
		t.Errorf("%d server failures reported, want 0", n)
	}
	end := f.hooks.ended.waitFor(t, "stream end", func(xdsclient.StreamEndInfo) bool { return true })
	if !end.ResponseReceived || end.Backoff != 0 {
		t.Errorf("stream end: response %v backoff %v; want true and no backoff", end.ResponseReceived, end.Backoff)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(retries) != 0 {
		t.Errorf("backoff consulted %v after a stream that had a response", retries)
	}
}

// Backoff grows across streams that fail before any response and resets
// once a response arrives.
func TestA57BackoffResetsOnResponse(t *testing.T) {
	var mu sync.Mutex
	var retries []int
	f := newFixture(t, nil, xdsclient.WithBackoff(func(r int) time.Duration {
		mu.Lock()
		retries = append(retries, r)
		mu.Unlock()
		return time.Millisecond
	}))
	rec := xdstest.NewWatcher()
	defer f.c.Watch(xdsresource.ClusterType, "c1", rec)()
	for i := 0; i < 3; i++ {
		st := f.NextStream()
		f.RecvType(st, cdsURL)
		st.End(status.Error(codes.Unavailable, "no response"))
	}
	st := f.NextStream()
	f.RecvType(st, cdsURL)
	f.send(st, cdsURL, "1", controlplane.Cluster("c1", "c1"))
	f.RecvType(st, cdsURL)
	st.End(status.Error(codes.Unavailable, "after a response"))
	st = f.NextStream()
	f.RecvType(st, cdsURL)
	st.End(status.Error(codes.Unavailable, "no response again"))
	f.NextStream()
	mu.Lock()
	got := append([]int(nil), retries...)
	mu.Unlock()
	want := []int{0, 1, 2, 0}
	if len(got) != len(want) {
		t.Fatalf("backoff retries %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("backoff retries %v, want %v", got, want)
		}
	}
}

// The timer does not run while the channel cannot connect, however long
// that lasts: no does-not-exist is reported for a server that is down.
func TestA57NoTimerWhileUnreachable(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil, xdsclient.WithResourceTimeout(time.Millisecond),
		xdsclient.WithBackoff(func(int) time.Duration { return 20 * time.Millisecond }))
	f.Srv.Stop()
	rec := xdstest.NewWatcher()
	defer f.c.Watch(xdsresource.ClusterType, "c1", rec)()
	// Several failed attempts, each longer than the timer.
	for i := 0; i < 3; i++ {
		rec.Expect(t, xdsclient.NotifyResourceError, codes.Unavailable)
	}
	if n := len(f.hooks.timerStarts.snapshot()); n != 0 {
		t.Fatalf("%d timers started while the server was unreachable", n)
	}
	f.checkEntry(cdsURL, "c1", xdsclient.StateRequested, false)
	// The server comes back; now the timer runs and fires.
	if err := f.Srv.Restart(); err != nil {
		t.Fatal(err)
	}
	for {
		e := rec.Next(t)
		if e.Kind == xdsclient.NotifyResourceError && status.Code(e.Err) == codes.NotFound {
			break
		}
	}
	f.checkEntry(cdsURL, "c1", xdsclient.StateDoesNotExist, false)
}

// The timer stops when the stream breaks and starts again on the next one.
func TestA57TimerStopsWithStreamAndRestarts(t *testing.T) {
	f := newFixture(t, nil, xdsclient.WithResourceTimeout(time.Hour))
	rec := xdstest.NewWatcher()
	defer f.c.Watch(xdsresource.ClusterType, "c1", rec)()
	st := f.NextStream()
	f.RecvType(st, cdsURL)
	f.hooks.timerStarts.waitFor(t, "first timer start", func(xdsclient.ResourceTimerInfo) bool { return true })
	st.End(status.Error(codes.Unavailable, "break"))
	f.hooks.timerStops.waitFor(t, "timer stop", func(xdsclient.ResourceTimerInfo) bool { return true })
	rec.Expect(t, xdsclient.NotifyResourceError, codes.Unavailable)
	st2 := f.NextStream()
	f.RecvType(st2, cdsURL)
	deadline := time.After(xdstest.Timeout)
	for len(f.hooks.timerStarts.snapshot()) < 2 {
		select {
		case <-f.hooks.timerStarts.wake:
		case <-deadline:
			t.Fatal("timer did not start again on the new stream")
		}
	}
	f.checkEntry(cdsURL, "c1", xdsclient.StateRequested, false)
}

// A57 connectivity failure reports reach every watcher on the server, and
// the connected flag follows A78: true on the first stream, false on a
// failure, true again only on a response.
func TestA57ConnectedFlag(t *testing.T) {
	f := newFixture(t, nil)
	rec, st := f.watchCached("c1")
	f.hooks.connected.waitFor(t, "connected", func(i xdsclient.ConnectedInfo) bool { return i.Connected })
	st.End(nil)
	st2 := f.NextStream()
	f.RecvType(st2, cdsURL)
	st2.End(status.Error(codes.Unavailable, "no response"))
	rec.Expect(t, xdsclient.NotifyAmbientError, codes.Unavailable)
	f.hooks.connected.waitFor(t, "disconnected", func(i xdsclient.ConnectedInfo) bool { return !i.Connected })
	st3 := f.NextStream()
	f.RecvType(st3, cdsURL)
	if got := f.hooks.connected.snapshot(); len(got) != 2 {
		t.Fatalf("connected events %+v before a response on the new stream, want 2", got)
	}
	f.send(st3, cdsURL, "1", controlplane.Cluster("c1", "c1"))
	got := f.hooks.connected.waitFor(t, "reconnected", func(i xdsclient.ConnectedInfo) bool { return i.Connected && len(f.hooks.connected.snapshot()) == 3 })
	_ = got
	if n := len(f.hooks.failures.snapshot()); n != 1 {
		t.Errorf("%d server failures, want 1", n)
	}
}
