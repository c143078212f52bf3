package xdsclient_test

import (
	"context"
	"strings"
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/xdslens/xdslens/internal/controlplane"
	"github.com/xdslens/xdslens/internal/xdstest"
	"github.com/xdslens/xdslens/xdsclient"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
)

var (
	ldsURL = xdsresource.ListenerType.TypeURL()
	cdsURL = xdsresource.ClusterType.TypeURL()
	edsURL = xdsresource.EndpointsType.TypeURL()
)

// fixture is a client connected to a scripted ADS server, with every hook
// recorded.
type fixture struct {
	t       *testing.T
	ctx     context.Context
	srv     *xdstest.ADSServer
	c       *xdsclient.Client
	hooks   *recordedHooks
	streams []*xdstest.Stream
}

func newFixture(t *testing.T, features []string, opts ...xdsclient.Option) *fixture {
	t.Helper()
	f := &fixture{t: t, ctx: ctxT(t), srv: xdstest.NewADSServer(t), hooks: newRecordedHooks()}
	f.c = newClient(t, bootstrapFor(t, f.srv.Addr(), features...), append([]xdsclient.Option{xdsclient.WithHooks(f.hooks.hooks())}, opts...)...)
	return f
}

// stream waits for the client's next ADS stream.
func (f *fixture) stream() *xdstest.Stream {
	f.t.Helper()
	st, err := f.srv.NextStream(f.ctx)
	if err != nil {
		f.t.Fatalf("waiting for an ADS stream: %v", err)
	}
	f.streams = append(f.streams, st)
	return st
}

// recv waits for the next request of typeURL on st.
func (f *fixture) recv(st *xdstest.Stream, typeURL string) *discoveryv3.DiscoveryRequest {
	f.t.Helper()
	req, err := st.RecvType(f.ctx, typeURL)
	if err != nil {
		f.t.Fatalf("waiting for a %s request: %v", typeURL, err)
	}
	return req
}

func (f *fixture) send(st *xdstest.Stream, typeURL, version string, res ...proto.Message) *discoveryv3.DiscoveryResponse {
	f.t.Helper()
	resp := xdstest.Response(typeURL, version, res...)
	if err := st.Send(resp); err != nil {
		f.t.Fatalf("send: %v", err)
	}
	resp.Nonce = st.LastNonce()
	return resp
}

// watchCached watches cds c1 and has the server deliver version 1 of it.
func (f *fixture) watchCached(name string) (*recorder, *xdstest.Stream) {
	f.t.Helper()
	rec := newRecorder()
	f.t.Cleanup(f.c.Watch(xdsresource.ClusterType, name, rec))
	st := f.stream()
	f.recv(st, cdsURL)
	f.send(st, cdsURL, "1", controlplane.Cluster(name, name))
	rec.expect(f.t, xdsclient.NotifyResource, 0)
	f.recv(st, cdsURL) // ACK
	return rec, st
}

func (f *fixture) entry(typeURL, name string) xdsclient.EntrySnapshot {
	f.t.Helper()
	for _, e := range f.c.Dump() {
		if e.TypeURL == typeURL && e.Name == name {
			return e
		}
	}
	f.t.Fatalf("no cache entry for %s %q", typeURL, name)
	return xdsclient.EntrySnapshot{}
}

// checkEntry asserts an entry's state and whether it holds a resource.
func (f *fixture) checkEntry(typeURL, name string, state xdsclient.CacheState, cached bool) xdsclient.EntrySnapshot {
	f.t.Helper()
	e := f.entry(typeURL, name)
	if e.State != state || (e.Resource != nil) != cached {
		f.t.Fatalf("entry %q: state %v cached %v, want %v cached %v", name, e.State, e.Resource != nil, state, cached)
	}
	return e
}

// invalidCluster is a Cluster that gRPC rejects (STATIC is not supported).
func invalidCluster(name string) *clusterv3.Cluster {
	return &clusterv3.Cluster{Name: name, ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_STATIC}}
}

func errorResponse(typeURL, version string, errs ...*discoveryv3.ResourceError) *discoveryv3.DiscoveryResponse {
	r := xdstest.Response(typeURL, version)
	r.ResourceErrors = errs
	return r
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
