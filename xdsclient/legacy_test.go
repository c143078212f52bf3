package xdsclient_test

// The data error handling that preceded gRFC A88, selected with
// GRPC_EXPERIMENTAL_XDS_DATA_ERROR_HANDLING=false, and gRFC A53.

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/xdslens/xdslens/internal/testing/xdstest"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/controlplane"
	"github.com/xdslens/xdslens/xdsclient"
	"github.com/xdslens/xdslens/xdsclient/bootstrap"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
)

func legacy() xdsclient.Option { return xdsclient.WithLegacyDataErrorHandling(true) }

func TestLegacyEnvironmentVariable(t *testing.T) {
	t.Setenv(xdsclient.EnvDataErrorHandling, "false")
	srv := xdstest.NewADSServer(t)
	c, err := xdsclient.New(bootstrapFor(t, srv.Addr()), xdsclient.WithBackoff(func(int) time.Duration { return time.Millisecond }))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rec := xdstest.NewWatcher()
	defer c.Watch(xdsresource.ClusterType, "c1", rec)()
	st, err := srv.NextStream(xdstest.Context(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.RecvType(xdstest.Context(t), cdsURL); err != nil {
		t.Fatal(err)
	}
	st.Send(xdstest.Response(cdsURL, "1", controlplane.Cluster("c1", "c1")))
	rec.Expect(t, xdsclient.NotifyResource, 0)
	st.RecvType(xdstest.Context(t), cdsURL)
	st.Send(xdstest.Response(cdsURL, "2"))
	// Legacy: the deletion drops the resource.
	rec.Expect(t, xdsclient.NotifyResourceError, codes.NotFound)
}

// Legacy: an LDS/CDS deletion drops the cached resource and tells watchers
// through ResourceChanged(NOT_FOUND).
func TestLegacyDeletionDrops(t *testing.T) {
	f := newFixture(t, nil, legacy())
	rec, st := f.watchCached("c1")
	f.send(st, cdsURL, "2")
	rec.Expect(t, xdsclient.NotifyResourceError, codes.NotFound)
	f.checkEntry(cdsURL, "c1", xdsclient.StateDoesNotExist, false)
}

// Legacy with ignore_resource_deletion (gRFC A53): the deletion is not
// delivered, the resource stays, one WARNING is logged, and INFO once the
// resource comes back.
func TestLegacyIgnoreResourceDeletion(t *testing.T) {
	logs := &xdstest.SyncBuffer{}
	logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	f := newFixture(t, []string{bootstrap.FeatureIgnoreResourceDeletion}, legacy(), xdsclient.WithLogger(logger))
	rec, st := f.watchCached("c1")
	f.send(st, cdsURL, "2")
	f.RecvType(st, cdsURL)
	f.send(st, cdsURL, "3") // still absent: no second warning
	f.RecvType(st, cdsURL)
	f.hooks.responses.waitFor(t, "version 3", func(i xdsclient.ResponseInfo) bool { return i.Version == "3" })
	rec.ExpectNone(t)
	f.checkEntry(cdsURL, "c1", xdsclient.StateACKed, true)
	if n := strings.Count(logs.String(), "level=WARN msg=\"xDS resource deletion ignored"); n != 1 {
		t.Fatalf("%d deletion warnings logged, want 1; log:\n%s", n, logs)
	}
	f.send(st, cdsURL, "4", controlplane.Cluster("c1", "c1"))
	f.RecvType(st, cdsURL)
	f.hooks.responses.waitFor(t, "version 4", func(i xdsclient.ResponseInfo) bool { return i.Version == "4" })
	if !strings.Contains(logs.String(), "level=INFO msg=\"xDS resource deletion no longer ignored") {
		t.Fatalf("no INFO log when the resource came back; log:\n%s", logs)
	}
}

// Legacy with ignore_resource_deletion: cancelling the watch while a
// deletion is ignored logs the INFO line.
func TestLegacyIgnoreResourceDeletionUnsubscribe(t *testing.T) {
	logs := &xdstest.SyncBuffer{}
	logger := slog.New(slog.NewTextHandler(logs, nil))
	f := newFixture(t, []string{bootstrap.FeatureIgnoreResourceDeletion}, legacy(), xdsclient.WithLogger(logger))
	rec := xdstest.NewWatcher()
	cancel := f.c.Watch(xdsresource.ClusterType, "c1", rec)
	st := f.NextStream()
	f.RecvType(st, cdsURL)
	f.send(st, cdsURL, "1", controlplane.Cluster("c1", "c1"))
	rec.Expect(t, xdsclient.NotifyResource, 0)
	f.send(st, cdsURL, "2")
	f.hooks.responses.waitFor(t, "version 2", func(i xdsclient.ResponseInfo) bool { return i.Version == "2" })
	cancel()
	if !strings.Contains(logs.String(), "watch cancelled") {
		t.Fatalf("no INFO log on unsubscribe; log:\n%s", logs)
	}
}

// Legacy: A88's ignore_resource_deletion deprecation does not apply, and
// under A88 the feature is ignored (deletion is ambient).
func TestA88IgnoresIgnoreResourceDeletion(t *testing.T) {
	f := newFixture(t, []string{bootstrap.FeatureIgnoreResourceDeletion})
	rec, st := f.watchCached("c1")
	f.send(st, cdsURL, "2")
	rec.Expect(t, xdsclient.NotifyAmbientError, codes.NotFound)
	f.checkEntry(cdsURL, "c1", xdsclient.StateDoesNotExist, true)
}

// Legacy: a NACK of a cached resource is ambient even with
// fail_on_data_errors, which legacy mode does not use.
func TestLegacyNACKCachedIsAmbient(t *testing.T) {
	f := newFixture(t, []string{bootstrap.FeatureFailOnDataErrors}, legacy())
	rec, st := f.watchCached("c1")
	f.send(st, cdsURL, "2", xdstest.InvalidCluster("c1"))
	rec.Expect(t, xdsclient.NotifyAmbientError, codes.InvalidArgument)
	f.checkEntry(cdsURL, "c1", xdsclient.StateNACKed, true)
}

// Legacy: TP3 errors are not used; the entry stays REQUESTED and the timer
// decides, at the base duration with NOT_FOUND even when the server has
// resource_timer_is_transient_error.
func TestLegacyIgnoresTP3AndTransientTimer(t *testing.T) {
	f := newFixture(t, []string{bootstrap.FeatureResourceTimerIsTransientError}, legacy(), xdsclient.WithResourceTimeout(50*time.Millisecond))
	rec := xdstest.NewWatcher()
	defer f.c.Watch(xdsresource.ClusterType, "c1", rec)()
	st := f.NextStream()
	f.RecvType(st, cdsURL)
	if err := st.Send(xdstest.ErrorResponse(cdsURL, "1", xdstest.ResourceError("c1", codes.PermissionDenied, "denied"))); err != nil {
		t.Fatal(err)
	}
	e := rec.Expect(t, xdsclient.NotifyResourceError, codes.NotFound)
	if contains(e.Err, "denied") {
		t.Errorf("legacy mode used the TP3 error: %v", e.Err)
	}
	started := f.hooks.timerStarts.waitFor(t, "timer", func(xdsclient.ResourceTimerInfo) bool { return true })
	if started.Duration != 50*time.Millisecond {
		t.Errorf("timer %v, want the 50ms base", started.Duration)
	}
	f.checkEntry(cdsURL, "c1", xdsclient.StateDoesNotExist, false)
}
