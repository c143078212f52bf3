package xdsclient_test

import (
	"strings"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/xdslens/xdslens/internal/testing/xdstest"
	"github.com/xdslens/xdslens/xdsclient"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
)

// clusterImpostor claims the Cluster type URL with a decoder of its own.
type clusterImpostor struct{ extensionType }

func (clusterImpostor) TypeURL() string { return xdsresource.ClusterType.TypeURL() }

// A type URL has one Type: another Type for it is an error, at New and at
// Watch, so that a typed watcher never gets a value of another Go type.
func TestSecondTypeForATypeURLIsAnError(t *testing.T) {
	_, err := xdsclient.New(bootstrapFor(t, "127.0.0.1:1"), xdsclient.WithResourceTypes(clusterImpostor{}))
	if err == nil || !strings.Contains(err.Error(), xdsresource.ClusterType.TypeURL()) || !strings.Contains(err.Error(), "already registered") {
		t.Fatalf("New with a second Cluster type: %v, want an error naming the type URL", err)
	}

	f := newFixture(t, nil)
	var n atomic.Int64
	defer f.c.Watch(extensionType{}, "ext", xdstest.NewWatcher())()
	rec := xdstest.NewWatcher()
	defer f.c.Watch(countingType{decodes: &n}, "ext2", rec)()
	e := rec.Expect(t, xdsclient.NotifyResourceError, codes.InvalidArgument)
	if !contains(e.Err, "already registered") || !contains(e.Err, `"ext2"`) {
		t.Errorf("error %v does not say the type URL is taken or name the resource", e.Err)
	}
	for _, s := range f.c.Dump() {
		if s.Name == "ext2" {
			t.Fatalf("a refused watch made a cache entry: %+v", s)
		}
	}
	// The same Type value again is no conflict.
	again := xdstest.NewWatcher()
	defer f.c.Watch(extensionType{}, "ext", again)()
	drain(t, f.c)
	again.ExpectNone(t)
}

// A watch that cannot be served makes no cache entry, fires no cache hook,
// and its callback can be cancelled like any other.
func TestRefusedWatchMakesNoEntry(t *testing.T) {
	f := newFixture(t, nil)
	rec := xdstest.NewWatcher()
	cancel := f.c.Watch(xdsresource.ClusterType, "xdstp://unknown.example/envoy.config.cluster.v3.Cluster/c1", rec)
	e := rec.Expect(t, xdsclient.NotifyResourceError, codes.InvalidArgument)
	if !contains(e.Err, "unknown.example") {
		t.Errorf("error %v does not name the authority", e.Err)
	}
	cancel()
	if d := f.c.Dump(); len(d) != 0 {
		t.Fatalf("cache after a refused watch: %+v", d)
	}
	if s := f.hooks.states.snapshot(); len(s) != 0 {
		t.Fatalf("cache state hooks for a refused watch: %+v", s)
	}
	f.hooks.notified.waitFor(t, "the refusal's notification hook", func(i xdsclient.NotificationInfo) bool {
		return i.Kind == xdsclient.NotifyResourceError && strings.Contains(i.Name, "c1")
	})
}
