package xdsclient_test

import (
	"strings"
	"testing"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/xdslens/xdslens/internal/testing/xdstest"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/controlplane"
	"github.com/xdslens/xdslens/xdsclient"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
)

var cdsURL = xdsresource.ClusterType.TypeURL()

// fixture is a client connected to a scripted ADS server, with every hook
// recorded.
type fixture struct {
	xdstest.Script
	c     *xdsclient.Client
	hooks *recordedHooks
}

func newFixture(t *testing.T, features []string, opts ...xdsclient.Option) *fixture {
	t.Helper()
	f := &fixture{Script: xdstest.Script{T: t, Ctx: xdstest.Context(t), Srv: xdstest.NewADSServer(t)}, hooks: newRecordedHooks()}
	f.c = newClient(t, bootstrapFor(t, f.Srv.Addr(), features...), append([]xdsclient.Option{xdsclient.WithHooks(f.hooks.hooks())}, opts...)...)
	return f
}

// send sends a response of typeURL at version holding res on st, and
// returns it as sent, with its nonce.
func (f *fixture) send(st *xdstest.Stream, typeURL, version string, res ...proto.Message) *discoveryv3.DiscoveryResponse {
	f.T.Helper()
	return f.Send(st, xdstest.Response(typeURL, version, res...))
}

// watchCached watches cds c1 and has the server deliver version 1 of it.
func (f *fixture) watchCached(name string) (*xdstest.Watcher, *xdstest.Stream) {
	f.T.Helper()
	rec, st := f.WatchCluster(f.c, name)
	f.send(st, cdsURL, "1", controlplane.Cluster(name, name))
	rec.Expect(f.T, xdsclient.NotifyResource, 0)
	f.RecvType(st, cdsURL) // ACK
	return rec, st
}

func (f *fixture) entry(typeURL, name string) xdsclient.EntrySnapshot {
	f.T.Helper()
	for _, e := range f.c.Dump() {
		if e.TypeURL == typeURL && e.Name == name {
			return e
		}
	}
	f.T.Fatalf("no cache entry for %s %q", typeURL, name)
	return xdsclient.EntrySnapshot{}
}

// checkEntry asserts an entry's state and whether it holds a resource.
func (f *fixture) checkEntry(typeURL, name string, state xdsclient.CacheState, cached bool) xdsclient.EntrySnapshot {
	f.T.Helper()
	e := f.entry(typeURL, name)
	if e.State != state || (e.Cached) != cached {
		f.T.Fatalf("entry %q: state %v cached %v, want %v cached %v", name, e.State, e.Cached, state, cached)
	}
	return e
}

// checkNames asserts that an error message names the resource, the server
// and the node.
func checkNames(t *testing.T, err error, name, server string) {
	t.Helper()
	msg := err.Error()
	for _, want := range []string{`"` + name + `"`, `"` + server + `"`, `"` + testNodeID + `"`} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not name %s", msg, want)
		}
	}
}

// errorOf returns a request's error_detail as an error, nil if none.
func errorOf(req *discoveryv3.DiscoveryRequest) error {
	if req.GetErrorDetail() == nil {
		return nil
	}
	return status.ErrorProto(req.GetErrorDetail())
}
