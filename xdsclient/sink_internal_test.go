package xdsclient

import (
	"errors"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/xdslens/xdslens/xdsclient/xdsresource"
)

// recordingTyped is a TypedWatcher of clusters that records its callbacks.
type recordingTyped struct {
	values  []*xdsresource.Cluster
	errs    []error
	ambient []error
}

func (w *recordingTyped) ResourceChanged(v *xdsresource.Cluster, err error) {
	w.values, w.errs = append(w.values, v), append(w.errs, err)
}

func (w *recordingTyped) AmbientError(err error) { w.ambient = append(w.ambient, err) }

// A watch's sink is kept as given, with no adapter: deliverTo gives each
// callback to a TypedWatcher as its typed value, or as an INTERNAL error
// when the value is of another Go type, and to a Watcher as the Resource.
func TestDeliverToSinks(t *testing.T) {
	cluster := &xdsresource.Cluster{}
	typed := &recordingTyped{}
	deliverTo(typed, &Resource{Type: xdsresource.ClusterType, Name: "c", Value: cluster}, nil, false)
	deliverTo(typed, &Resource{Type: xdsresource.ClusterType, Name: "c", Value: &xdsresource.Listener{}}, nil, false)
	ambient := errors.New("ambient")
	deliverTo(typed, nil, ambient, true)
	if len(typed.values) != 2 || typed.values[0] != cluster || typed.errs[0] != nil {
		t.Fatalf("typed watcher got %v, %v; want the cluster first, without error", typed.values, typed.errs)
	}
	if typed.values[1] != nil || status.Code(typed.errs[1]) != codes.Internal {
		t.Errorf("a Listener given to a cluster watcher: got %v, %v; want nil and an INTERNAL error", typed.values[1], typed.errs[1])
	}
	if len(typed.ambient) != 1 || typed.ambient[0] != ambient {
		t.Errorf("ambient errors %v, want [%v]", typed.ambient, ambient)
	}

	var got []*Resource
	plain := WatcherFuncs{OnResourceChanged: func(r *Resource, _ error) { got = append(got, r) }}
	r := &Resource{Name: "c", Value: cluster}
	deliverTo(plain, r, nil, false)
	if len(got) != 1 || got[0] != r {
		t.Errorf("Watcher got %v, want the Resource itself", got)
	}
}

// A sink that is neither a Watcher nor a typed watcher of a built-in type
// is a bug of the client's own, not a user's: it panics.
func TestDeliverToUnknownSinkPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("deliverTo of a string did not panic")
		}
	}()
	deliverTo("not a watcher", nil, nil, false)
}
