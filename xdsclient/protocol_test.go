package xdsclient_test

// The SotW ADS protocol as the client speaks it: node, version and nonce,
// ACK and NACK, subscription changes, re-subscription on a new stream.

import (
	"slices"
	"testing"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdslens/xdslens/internal/testing/xdstest"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/controlplane"
	"github.com/xdslens/xdslens/xdsclient"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
)

func names(req *discoveryv3.DiscoveryRequest) []string {
	n := slices.Clone(req.GetResourceNames())
	slices.Sort(n)
	return n
}

func TestProtocolNodeVersionNonce(t *testing.T) {
	f := newFixture(t, nil)
	rec := xdstest.NewWatcher()
	defer f.c.Watch(xdsresource.ClusterType, "c1", rec)()
	st := f.NextStream()
	first := f.RecvType(st, cdsURL)
	if first.GetNode().GetId() != testNodeID || first.GetNode().GetUserAgentName() != xdsclient.UserAgentName {
		t.Errorf("first request node = %v, want id %q and user agent %q", first.GetNode(), testNodeID, xdsclient.UserAgentName)
	}
	if !slices.Contains(first.GetNode().GetClientFeatures(), "xds.config.resource-in-sotw") {
		t.Errorf("node client features %v lack xds.config.resource-in-sotw", first.GetNode().GetClientFeatures())
	}
	if first.GetVersionInfo() != "" || first.GetResponseNonce() != "" {
		t.Errorf("first request version %q nonce %q, want both empty", first.GetVersionInfo(), first.GetResponseNonce())
	}
	resp := f.send(st, cdsURL, "v1", controlplane.Cluster("c1", "c1"))
	ack := f.RecvType(st, cdsURL)
	if ack.GetNode() != nil {
		t.Error("the ACK repeats the node; only the first request of a stream carries it")
	}
	if ack.GetVersionInfo() != "v1" || ack.GetResponseNonce() != resp.GetNonce() || ack.GetErrorDetail() != nil {
		t.Errorf("ACK version %q nonce %q error %v, want v1, %q, none", ack.GetVersionInfo(), ack.GetResponseNonce(), ack.GetErrorDetail(), resp.GetNonce())
	}
	if got := names(ack); !slices.Equal(got, []string{"c1"}) {
		t.Errorf("ACK names %v, want [c1]", got)
	}
	rec.Expect(t, xdsclient.NotifyResource, 0)

	// A new stream: node again, the last accepted version kept, no nonce,
	// every watched name re-subscribed.
	st.End(nil)
	st2 := f.NextStream()
	re := f.RecvType(st2, cdsURL)
	if re.GetNode().GetId() != testNodeID || re.GetVersionInfo() != "v1" || re.GetResponseNonce() != "" {
		t.Errorf("first request on a new stream: node %v version %q nonce %q; want the node, v1, no nonce", re.GetNode(), re.GetVersionInfo(), re.GetResponseNonce())
	}
	if got := names(re); !slices.Equal(got, []string{"c1"}) {
		t.Errorf("re-subscription names %v, want [c1]", got)
	}
}

func TestProtocolSubscribeUnsubscribe(t *testing.T) {
	f := newFixture(t, nil)
	r1, r2 := xdstest.NewWatcher(), xdstest.NewWatcher()
	cancel1 := f.c.Watch(xdsresource.ClusterType, "c1", r1)
	st := f.NextStream()
	if got := names(f.RecvType(st, cdsURL)); !slices.Equal(got, []string{"c1"}) {
		t.Fatalf("names %v, want [c1]", got)
	}
	cancel2 := f.c.Watch(xdsresource.ClusterType, "c2", r2)
	if got := names(f.RecvType(st, cdsURL)); !slices.Equal(got, []string{"c1", "c2"}) {
		t.Fatalf("names %v, want [c1 c2]", got)
	}
	// A second watcher of c2 sends nothing new; its cancel neither.
	r2b := xdstest.NewWatcher()
	cancel2b := f.c.Watch(xdsresource.ClusterType, "c2", r2b)
	cancel2b()
	cancel1()
	if got := names(f.RecvType(st, cdsURL)); !slices.Equal(got, []string{"c2"}) {
		t.Fatalf("names %v after cancelling c1, want [c2]", got)
	}
	// The last cancel leaves the server unused: its channel closes, the
	// stream ends, and observers see it go.
	cancel2()
	select {
	case <-st.Done():
	case <-xdstest.Context(t).Done():
		t.Fatal("the stream did not end after the last watch was cancelled")
	}
	f.hooks.closed.waitFor(t, "ChannelClosed", func(i xdsclient.ChannelInfo) bool { return i.Server == f.Srv.Addr() })
	f.hooks.connected.waitFor(t, "connected false", func(i xdsclient.ConnectedInfo) bool { return !i.Connected })
	if n := len(f.c.Dump()); n != 0 {
		t.Errorf("%d cache entries after every watch was cancelled, want 0", n)
	}
}

// Resources not subscribed are ignored and not counted; valid siblings of
// an invalid resource are used (gRFC A46) and the version advances.
func TestProtocolPartialResponse(t *testing.T) {
	f := newFixture(t, nil)
	r1, r2 := xdstest.NewWatcher(), xdstest.NewWatcher()
	defer f.c.Watch(xdsresource.ClusterType, "c1", r1)()
	defer f.c.Watch(xdsresource.ClusterType, "c2", r2)()
	st := f.NextStream()
	req := f.RecvType(st, cdsURL)
	for len(req.GetResourceNames()) < 2 {
		req = f.RecvType(st, cdsURL)
	}
	f.send(st, cdsURL, "1", controlplane.Cluster("c1", "c1"), xdstest.InvalidCluster("c2"), controlplane.Cluster("other", "other"))
	r1.Expect(t, xdsclient.NotifyResource, 0)
	r2.Expect(t, xdsclient.NotifyResourceError, codes.InvalidArgument)
	nack := f.RecvType(st, cdsURL)
	if nack.GetErrorDetail() == nil || nack.GetVersionInfo() != "1" {
		t.Errorf("NACK version %q error %v, want version 1 (valid resources accepted) and an error", nack.GetVersionInfo(), nack.GetErrorDetail())
	}
	resp := f.hooks.responses.waitFor(t, "response", func(xdsclient.ResponseInfo) bool { return true })
	if resp.Valid != 1 || resp.Invalid != 1 {
		t.Errorf("response counted valid %d invalid %d, want 1 and 1 (the unsubscribed one not counted)", resp.Valid, resp.Invalid)
	}
}

// A response naming a resource twice is NACKed.
func TestProtocolDuplicateNames(t *testing.T) {
	f := newFixture(t, nil)
	rec := xdstest.NewWatcher()
	defer f.c.Watch(xdsresource.ClusterType, "c1", rec)()
	st := f.NextStream()
	f.RecvType(st, cdsURL)
	f.send(st, cdsURL, "1", controlplane.Cluster("c1", "c1"), controlplane.Cluster("c1", "c1"))
	rec.Expect(t, xdsclient.NotifyResource, 0)
	nack := f.RecvType(st, cdsURL)
	if !contains(errorOf(nack), "more than once") {
		t.Errorf("request after a duplicate: error %v, want a NACK naming the duplicate", errorOf(nack))
	}
}

// Resources wrapped in envoy.service.discovery.v3.Resource are unwrapped.
func TestProtocolResourceWrapper(t *testing.T) {
	f := newFixture(t, nil)
	rec := xdstest.NewWatcher()
	defer f.c.Watch(xdsresource.ClusterType, "c1", rec)()
	st := f.NextStream()
	f.RecvType(st, cdsURL)
	inner, _ := anypb.New(controlplane.Cluster("c1", "c1"))
	wrapper, _ := anypb.New(&discoveryv3.Resource{Name: "c1", Resource: inner})
	resp := xdstest.Response(cdsURL, "1")
	resp.Resources = []*anypb.Any{wrapper}
	if err := st.Send(resp); err != nil {
		t.Fatal(err)
	}
	rec.Expect(t, xdsclient.NotifyResource, 0)
}

// An update whose bytes equal the held resource's is not delivered again.
func TestProtocolUnchangedNotRedelivered(t *testing.T) {
	f := newFixture(t, nil)
	r1, st := f.watchCached("c1")
	r2 := xdstest.NewWatcher()
	defer f.c.Watch(xdsresource.ClusterType, "c2", r2)()
	f.RecvType(st, cdsURL)
	f.send(st, cdsURL, "2", controlplane.Cluster("c1", "c1"), controlplane.Cluster("c2", "c2"))
	r2.Expect(t, xdsclient.NotifyResource, 0)
	r1.ExpectNone(t)
	if e := f.entry(cdsURL, "c1"); e.Version != "2" {
		t.Errorf("entry version %q, want 2: the resource was accepted again at version 2", e.Version)
	}
}

// A name that is not a known authority is an error for the watcher and
// touches no stream.
func TestUnknownAuthority(t *testing.T) {
	f := newFixture(t, nil)
	rec := xdstest.NewWatcher()
	defer f.c.Watch(xdsresource.ClusterType, "xdstp://nowhere/envoy.config.cluster.v3.Cluster/c1", rec)()
	e := rec.Expect(t, xdsclient.NotifyResourceError, codes.InvalidArgument)
	if !contains(e.Err, "nowhere") {
		t.Errorf("error %v does not name the authority", e.Err)
	}
	if n := len(f.hooks.started.snapshot()); n != 0 {
		t.Errorf("%d streams started for an unknown authority", n)
	}
}
