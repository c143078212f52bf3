package xdsclient_test

// One test per row of gRFC A88's "Summary of Behavior Changes" table, in the
// table's order, each against a scripted ADS server on loopback.

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/status"

	"github.com/xdslens/xdslens/internal/testing/xdstest"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/controlplane"
	"github.com/xdslens/xdslens/xdsclient"
	"github.com/xdslens/xdslens/xdsclient/bootstrap"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
)

// Row 1: channel TRANSIENT_FAILURE, nothing cached → ResourceChanged(error).
func TestA88ChannelTransientFailureUncached(t *testing.T) {
	f := newFixture(t, nil)
	f.Srv.Stop() // nothing listens: the channel goes TRANSIENT_FAILURE
	rec := xdstest.NewWatcher()
	defer f.c.Watch(xdsresource.ClusterType, "c1", rec)()
	e := rec.Expect(t, xdsclient.NotifyResourceError, codes.Unavailable)
	checkNames(t, e.Err, "c1", f.Srv.Addr())
	f.hooks.connectivity.waitFor(t, "TRANSIENT_FAILURE", func(i xdsclient.ConnectivityInfo) bool {
		return i.State == connectivity.TransientFailure
	})
	f.hooks.failures.waitFor(t, "a server failure", func(xdsclient.ServerFailureInfo) bool { return true })
	f.checkEntry(cdsURL, "c1", xdsclient.StateRequested, false)
}

// Row 2: channel TRANSIENT_FAILURE, resource cached → AmbientError.
func TestA88ChannelTransientFailureCached(t *testing.T) {
	f := newFixture(t, nil)
	rec, _ := f.watchCached("c1")
	f.Srv.Stop()
	e := rec.Expect(t, xdsclient.NotifyAmbientError, codes.Unavailable)
	checkNames(t, e.Err, "c1", f.Srv.Addr())
	f.checkEntry(cdsURL, "c1", xdsclient.StateACKed, true)
}

// Row 3: ADS stream failed before any response, nothing cached →
// ResourceChanged(error) carrying the stream's status.
func TestA88StreamFailedWithoutResponseUncached(t *testing.T) {
	f := newFixture(t, nil)
	rec := xdstest.NewWatcher()
	defer f.c.Watch(xdsresource.ClusterType, "c1", rec)()
	st := f.NextStream()
	f.RecvType(st, cdsURL)
	st.End(status.Error(codes.Unavailable, "scripted stream failure"))
	e := rec.Expect(t, xdsclient.NotifyResourceError, codes.Unavailable)
	if !contains(e.Err, "scripted stream failure") {
		t.Errorf("error %v does not carry the stream's status", e.Err)
	}
	f.hooks.ended.waitFor(t, "stream end without response", func(i xdsclient.StreamEndInfo) bool { return !i.ResponseReceived })
}

// Row 4: ADS stream failed before any response, cached → AmbientError.
func TestA88StreamFailedWithoutResponseCached(t *testing.T) {
	f := newFixture(t, nil)
	rec, st := f.watchCached("c1")
	st.End(status.Error(codes.Unavailable, "first stream ends after a response"))
	st2 := f.NextStream() // no error: the first stream had a response (A57)
	f.RecvType(st2, cdsURL)
	st2.End(status.Error(codes.Unavailable, "second stream ends with no response"))
	e := rec.Expect(t, xdsclient.NotifyAmbientError, codes.Unavailable)
	if !contains(e.Err, "second stream ends with no response") {
		t.Errorf("ambient error %v does not carry the stream's status", e.Err)
	}
	f.checkEntry(cdsURL, "c1", xdsclient.StateACKed, true)
}

// Row 5: NACK, nothing cached → ResourceChanged(error).
func TestA88NACKUncached(t *testing.T) {
	f := newFixture(t, nil)
	rec := xdstest.NewWatcher()
	defer f.c.Watch(xdsresource.ClusterType, "c1", rec)()
	st := f.NextStream()
	f.RecvType(st, cdsURL)
	resp := f.send(st, cdsURL, "1", xdstest.InvalidCluster("c1"))
	e := rec.Expect(t, xdsclient.NotifyResourceError, codes.InvalidArgument)
	checkNames(t, e.Err, "c1", f.Srv.Addr())
	nack := f.RecvType(st, cdsURL)
	if nack.GetErrorDetail() == nil || nack.GetResponseNonce() != resp.GetNonce() || nack.GetVersionInfo() != "" {
		t.Errorf("NACK = version %q nonce %q error %v; want version \"\", nonce %q, an error_detail",
			nack.GetVersionInfo(), nack.GetResponseNonce(), nack.GetErrorDetail(), resp.GetNonce())
	}
	if !contains(errorOf(nack), `"c1"`) {
		t.Errorf("NACK error_detail %q does not name the resource", nack.GetErrorDetail().GetMessage())
	}
	s := f.checkEntry(cdsURL, "c1", xdsclient.StateNACKed, false)
	if s.FailedVersion != "1" || s.Err == nil {
		t.Errorf("entry failed version %q err %v, want 1 and an error", s.FailedVersion, s.Err)
	}
}

// Row 6: NACK, cached, no fail_on_data_errors → AmbientError, keep it.
func TestA88NACKCached(t *testing.T) {
	f := newFixture(t, nil)
	rec, st := f.watchCached("c1")
	f.send(st, cdsURL, "2", xdstest.InvalidCluster("c1"))
	rec.Expect(t, xdsclient.NotifyAmbientError, codes.InvalidArgument)
	nack := f.RecvType(st, cdsURL)
	if nack.GetVersionInfo() != "1" || nack.GetErrorDetail() == nil {
		t.Errorf("NACK carries version %q error %v; want the version still in use (1) and an error", nack.GetVersionInfo(), nack.GetErrorDetail())
	}
	s := f.checkEntry(cdsURL, "c1", xdsclient.StateNACKed, true)
	if s.Version != "1" || s.FailedVersion != "2" {
		t.Errorf("entry version %q failed %q, want 1 and 2", s.Version, s.FailedVersion)
	}
}

// Row 7: NACK, cached, fail_on_data_errors → ResourceChanged(error), drop it.
func TestA88NACKCachedFailOnDataErrors(t *testing.T) {
	f := newFixture(t, []string{bootstrap.FeatureFailOnDataErrors})
	rec, st := f.watchCached("c1")
	f.send(st, cdsURL, "2", xdstest.InvalidCluster("c1"))
	rec.Expect(t, xdsclient.NotifyResourceError, codes.InvalidArgument)
	f.checkEntry(cdsURL, "c1", xdsclient.StateNACKed, false)
}

// Row 8: resource timeout → ResourceChanged(NOT_FOUND), or UNAVAILABLE and
// TIMEOUT with resource_timer_is_transient_error (twice the base timer).
func TestA88ResourceTimeout(t *testing.T) {
	for _, tc := range []struct {
		name     string
		features []string
		code     codes.Code
		state    xdsclient.CacheState
		timer    time.Duration
	}{
		{"default", nil, codes.NotFound, xdsclient.StateDoesNotExist, 50 * time.Millisecond},
		{"transient", []string{bootstrap.FeatureResourceTimerIsTransientError}, codes.Unavailable, xdsclient.StateTimeout, 100 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, tc.features, xdsclient.WithResourceTimeout(50*time.Millisecond))
			rec := xdstest.NewWatcher()
			defer f.c.Watch(xdsresource.ClusterType, "c1", rec)()
			st := f.NextStream()
			f.RecvType(st, cdsURL) // the server stays silent
			e := rec.Expect(t, xdsclient.NotifyResourceError, tc.code)
			checkNames(t, e.Err, "c1", f.Srv.Addr())
			f.checkEntry(cdsURL, "c1", tc.state, false)
			started := f.hooks.timerStarts.waitFor(t, "timer start", func(xdsclient.ResourceTimerInfo) bool { return true })
			if started.Duration != tc.timer {
				t.Errorf("timer duration %v, want %v", started.Duration, tc.timer)
			}
		})
	}
}

// Row 9: LDS/CDS deletion, cached, no fail_on_data_errors →
// AmbientError(NOT_FOUND), keep it (DOES_NOT_EXIST but cached).
func TestA88DeletionCached(t *testing.T) {
	f := newFixture(t, nil)
	rec, st := f.watchCached("c1")
	f.send(st, cdsURL, "2") // full state without c1
	e := rec.Expect(t, xdsclient.NotifyAmbientError, codes.NotFound)
	checkNames(t, e.Err, "c1", f.Srv.Addr())
	f.checkEntry(cdsURL, "c1", xdsclient.StateDoesNotExist, true)
	// The same resource comes back: the error is over (AmbientError(nil)),
	// ACKED again, nothing redelivered.
	f.RecvType(st, cdsURL)
	f.send(st, cdsURL, "3", controlplane.Cluster("c1", "c1"))
	if e := rec.Expect(t, xdsclient.NotifyAmbientError, codes.OK); e.Err != nil {
		t.Fatalf("got %v, want AmbientError(nil)", e)
	}
	f.checkEntry(cdsURL, "c1", xdsclient.StateACKed, true)
	// Deleted again, then back changed: ResourceChanged, which clears too.
	f.RecvType(st, cdsURL)
	f.send(st, cdsURL, "4")
	rec.Expect(t, xdsclient.NotifyAmbientError, codes.NotFound)
	f.RecvType(st, cdsURL)
	f.send(st, cdsURL, "5", controlplane.Cluster("c1", "c1-changed"))
	rec.Expect(t, xdsclient.NotifyResource, 0)
	f.checkEntry(cdsURL, "c1", xdsclient.StateACKed, true)
	f.RecvType(st, cdsURL)
	rec.ExpectNone(t)
}

// Row 10: LDS/CDS deletion, cached, fail_on_data_errors →
// ResourceChanged(NOT_FOUND), drop it.
func TestA88DeletionCachedFailOnDataErrors(t *testing.T) {
	f := newFixture(t, []string{bootstrap.FeatureFailOnDataErrors})
	rec, st := f.watchCached("c1")
	f.send(st, cdsURL, "2")
	rec.Expect(t, xdsclient.NotifyResourceError, codes.NotFound)
	f.checkEntry(cdsURL, "c1", xdsclient.StateDoesNotExist, false)
}

// Rows 11-15: TP3 errors.
func TestA88TP3Errors(t *testing.T) {
	for _, tc := range []struct {
		name     string
		code     codes.Code
		cached   bool
		features []string
		want     xdsclient.NotificationKind
		keep     bool
	}{
		{"NOT_FOUND uncached", codes.NotFound, false, nil, xdsclient.NotifyResourceError, false},
		{"PERMISSION_DENIED uncached", codes.PermissionDenied, false, nil, xdsclient.NotifyResourceError, false},
		{"NOT_FOUND cached", codes.NotFound, true, nil, xdsclient.NotifyAmbientError, true},
		{"PERMISSION_DENIED cached", codes.PermissionDenied, true, nil, xdsclient.NotifyAmbientError, true},
		{"NOT_FOUND cached fail_on_data_errors", codes.NotFound, true, []string{bootstrap.FeatureFailOnDataErrors}, xdsclient.NotifyResourceError, false},
		{"PERMISSION_DENIED cached fail_on_data_errors", codes.PermissionDenied, true, []string{bootstrap.FeatureFailOnDataErrors}, xdsclient.NotifyResourceError, false},
		{"UNAVAILABLE uncached", codes.Unavailable, false, nil, xdsclient.NotifyResourceError, false},
		{"INTERNAL uncached", codes.Internal, false, nil, xdsclient.NotifyResourceError, false},
		{"UNAVAILABLE cached", codes.Unavailable, true, nil, xdsclient.NotifyAmbientError, true},
		{"UNAVAILABLE cached fail_on_data_errors", codes.Unavailable, true, []string{bootstrap.FeatureFailOnDataErrors}, xdsclient.NotifyAmbientError, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, tc.features, xdsclient.WithResourceTimeout(time.Hour))
			var rec *xdstest.Watcher
			var st *xdstest.Stream
			if tc.cached {
				rec, st = f.watchCached("c1")
			} else {
				rec = xdstest.NewWatcher()
				defer f.c.Watch(xdsresource.ClusterType, "c1", rec)()
				st = f.NextStream()
				f.RecvType(st, cdsURL)
				f.hooks.timerStarts.waitFor(t, "timer start", func(xdsclient.ResourceTimerInfo) bool { return true })
			}
			resp := xdstest.ErrorResponse(cdsURL, "2", xdstest.ResourceError("c1", tc.code, "scripted TP3 error"))
			if err := st.Send(resp); err != nil {
				t.Fatal(err)
			}
			resp.Nonce = st.LastNonce()
			e := rec.Expect(t, tc.want, tc.code)
			checkNames(t, e.Err, "c1", f.Srv.Addr())
			if !contains(e.Err, "scripted TP3 error") {
				t.Errorf("error %v does not carry the server's message", e.Err)
			}
			f.checkEntry(cdsURL, "c1", xdsclient.StateReceivedError, tc.keep)
			// A well-formed TP3 error is ACKed, not NACKed.
			ack := f.RecvType(st, cdsURL)
			if ack.GetErrorDetail() != nil || ack.GetVersionInfo() != "2" || ack.GetResponseNonce() != resp.GetNonce() {
				t.Errorf("after a TP3 error the client sent version %q nonce %q error %v; want an ACK of version 2",
					ack.GetVersionInfo(), ack.GetResponseNonce(), ack.GetErrorDetail())
			}
			if !tc.cached {
				f.hooks.timerStops.waitFor(t, "timer stop", func(xdsclient.ResourceTimerInfo) bool { return true })
			}
		})
	}
}

// A new watcher of a cached resource with a pending ambient error gets the
// resource and then the ambient error, in that order.
func TestA88NewWatcherGetsResourceThenAmbientError(t *testing.T) {
	f := newFixture(t, nil)
	rec, st := f.watchCached("c1")
	f.send(st, cdsURL, "2", xdstest.InvalidCluster("c1"))
	rec.Expect(t, xdsclient.NotifyAmbientError, codes.InvalidArgument)
	rec2 := xdstest.NewWatcher()
	defer f.c.Watch(xdsresource.ClusterType, "c1", rec2)()
	r := rec2.Expect(t, xdsclient.NotifyResource, 0)
	if r.Resource.Version != "1" {
		t.Errorf("new watcher got version %q, want the cached 1", r.Resource.Version)
	}
	rec2.Expect(t, xdsclient.NotifyAmbientError, codes.InvalidArgument)
}

func contains(err error, s string) bool {
	return err != nil && strings.Contains(err.Error(), s)
}
