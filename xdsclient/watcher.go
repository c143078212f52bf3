package xdsclient

import (
	"fmt"
	"reflect"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdslens/xdslens/xdsclient/internal/xerr"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
	"github.com/xdslens/xdslens/xdsclient/xdsresource/routeconfig"
)

// Watcher receives what the client learns about one resource (gRFC A88).
//
// Callbacks for one watcher run one at a time, in the order the events
// happened, and never under a client lock, so a callback may call the
// client: add or cancel watches, or Close it (Close, called from a
// callback, returns without waiting for that callback to end, and no
// callback of a watch made before Close runs after it). The callbacks of
// watchers whose resources come from different xDS servers run on
// different goroutines, and may run at the same time; those of one server
// run one at a time (see Hooks).
//
// Flow control: the client does not read the next response from an xDS
// server until every callback caused by the previous one has returned, so a
// slow watcher slows its server's stream rather than letting updates queue
// without bound; the streams of other servers keep delivering.
type Watcher interface {
	// ResourceChanged delivers a new valid resource (err nil), or an error
	// that means the resource cannot be used (r nil): a watcher that had a
	// resource must stop using it.
	ResourceChanged(r *Resource, err error)
	// AmbientError delivers an error that must not change what the watcher
	// uses: the previously delivered resource stays valid. A later
	// ResourceChanged clears it.
	AmbientError(err error)
}

// Resource is one valid resource as delivered to watchers. The watchers
// notified of one update share it, and it must not be modified.
//
// The client's cache keeps a resource as the bytes it received, not as a
// decoded value: a watcher that needs the value keeps the Resource (or its
// Value). A watcher added while the resource is cached gets the cached bytes
// decoded again, equal to what earlier watchers got, with the version of the
// latest response that carried them.
type Resource struct {
	// Type is the resource's type.
	Type xdsresource.Type
	// Name is the resource's name.
	Name string
	// Version is the version_info of the response that carried it (for a
	// watcher added later, of the latest response that carried these bytes).
	Version string
	// Value is the decoded, validated value, for the built-in types one of
	// *xdsresource.Listener, *routeconfig.Config,
	// *xdsresource.Cluster or *xdsresource.ClusterLoadAssignment.
	Value any
	// Raw is the resource as received.
	Raw *anypb.Any
	// Server is the URI of the xDS server that sent it, as shown
	// (bootstrap.ServerConfig.ShownURI): what ReportLoad takes.
	Server string
	// ReceivedAt is when the response of Version arrived.
	ReceivedAt time.Time
}

// WatcherFuncs adapts two funcs to a Watcher. A nil func ignores its
// callback.
type WatcherFuncs struct {
	OnResourceChanged func(r *Resource, err error)
	OnAmbientError    func(err error)
}

// ResourceChanged calls f.OnResourceChanged.
func (f WatcherFuncs) ResourceChanged(r *Resource, err error) {
	if f.OnResourceChanged != nil {
		f.OnResourceChanged(r, err)
	}
}

// AmbientError calls f.OnAmbientError.
func (f WatcherFuncs) AmbientError(err error) {
	if f.OnAmbientError != nil {
		f.OnAmbientError(err)
	}
}

// TypedWatcher is a Watcher of one resource type that receives the decoded
// value directly, for use with WatchListener, WatchRouteConfig,
// WatchCluster and WatchEndpoints.
type TypedWatcher[T any] interface {
	// ResourceChanged delivers a new valid value (err nil), or an error
	// that means the resource cannot be used (value is the zero T).
	ResourceChanged(value T, err error)
	// AmbientError delivers an error that must not change what the watcher
	// uses.
	AmbientError(err error)
}

// A watch's sink is the watcher it was made with, kept as given: a
// Watcher, or the TypedWatcher of one of the typed helpers, with no adapter
// around it (a client may hold tens of thousands of watches).

// deliverTo gives a callback to sink: AmbientError(err) if ambient, else
// ResourceChanged(r, err).
func deliverTo(sink any, r *Resource, err error, ambient bool) {
	switch w := sink.(type) {
	case Watcher:
		if ambient {
			w.AmbientError(err)
			return
		}
		w.ResourceChanged(r, err)
	case TypedWatcher[*xdsresource.Listener]:
		deliverTyped(w, r, err, ambient)
	case TypedWatcher[*routeconfig.Config]:
		deliverTyped(w, r, err, ambient)
	case TypedWatcher[*xdsresource.Cluster]:
		deliverTyped(w, r, err, ambient)
	case TypedWatcher[*xdsresource.ClusterLoadAssignment]:
		deliverTyped(w, r, err, ambient)
	default:
		panic(fmt.Sprintf("xdsclient: a watch's sink is a %T, neither a Watcher nor a TypedWatcher of a built-in type", sink))
	}
}

// deliverTyped gives a callback to w, passing r's value on. A value of
// another Go type than T (the type URL is served by a Type other than the
// one the typed helper expects) is delivered as an error, never as a zero
// value with no error.
func deliverTyped[T any](w TypedWatcher[T], r *Resource, err error, ambient bool) {
	if ambient {
		w.AmbientError(err)
		return
	}
	var v T
	if r != nil && err == nil {
		var ok bool
		if v, ok = r.Value.(T); !ok {
			err = status.Errorf(codes.Internal, "%s %q: decoded value is a %T, not the %T this watcher takes", r.Type.TypeURL(), r.Name, r.Value, v)
		}
	}
	w.ResourceChanged(v, err)
}

// watchTyped watches name of typ for w, which, like Watch's watcher, must
// not be nil, nor a nil value of a pointer (map, func, chan, slice) type.
// T is one of the built-in types' values, which deliverTo knows.
func watchTyped[T any](c *Client, typ xdsresource.Type, name string, w TypedWatcher[T]) (cancel func()) {
	if isNil(w) {
		panic("xdsclient: Watch of " + xerr.ShortName(typ) + " " + xerr.Shown(name) + " with a nil TypedWatcher" + nilType(w))
	}
	return c.watch(typ, name, w)
}

// isNil reports whether w is nil or holds a nil value of a type that can
// be nil (a typed nil): calling a method of it would most likely crash.
func isNil(w any) bool {
	if w == nil {
		return true
	}
	switch v := reflect.ValueOf(w); v.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Func, reflect.Chan, reflect.Slice, reflect.UnsafePointer, reflect.Interface:
		return v.IsNil()
	}
	return false
}

// nilType is what a panic on a nil watcher says of w's type: " (a nil
// *T)" for a typed nil, "" for a nil interface.
func nilType(w any) string {
	if w == nil {
		return ""
	}
	return fmt.Sprintf(" (a nil %T)", w)
}

// WatchListener watches a Listener resource (see Client.Watch); it panics if w is nil or a typed nil.
func WatchListener(c *Client, name string, w TypedWatcher[*xdsresource.Listener]) (cancel func()) {
	return watchTyped(c, xdsresource.ListenerType, name, w)
}

// WatchRouteConfig watches a RouteConfiguration resource (see Client.Watch); it panics if w is nil or a typed nil.
func WatchRouteConfig(c *Client, name string, w TypedWatcher[*routeconfig.Config]) (cancel func()) {
	return watchTyped(c, xdsresource.RouteConfigType, name, w)
}

// WatchCluster watches a Cluster resource (see Client.Watch); it panics if w is nil or a typed nil.
func WatchCluster(c *Client, name string, w TypedWatcher[*xdsresource.Cluster]) (cancel func()) {
	return watchTyped(c, xdsresource.ClusterType, name, w)
}

// WatchEndpoints watches a ClusterLoadAssignment resource (see Client.Watch); it panics if w is nil or a typed nil.
func WatchEndpoints(c *Client, name string, w TypedWatcher[*xdsresource.ClusterLoadAssignment]) (cancel func()) {
	return watchTyped(c, xdsresource.EndpointsType, name, w)
}
