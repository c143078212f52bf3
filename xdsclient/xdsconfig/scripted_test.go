package xdsconfig_test

import (
	"slices"
	"strconv"
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/protobuf/proto"

	"github.com/xdslens/xdslens/internal/controlplane"
	"github.com/xdslens/xdslens/internal/xdstest"
	"github.com/xdslens/xdslens/xdsclient"
	"github.com/xdslens/xdslens/xdsclient/xdsconfig"
)

// scripted is a client of a scripted ADS server that holds, per type, the
// resources it serves: each push sends all of them, as a State of the
// World server does.
type scripted struct {
	xdstest.Script
	c       *xdsclient.Client
	st      *xdstest.Stream
	res     map[string]map[string]proto.Message // by type URL, by name
	version int
}

func newScripted(t *testing.T, features []string, opts ...xdsclient.Option) *scripted {
	f := &scripted{Script: xdstest.Script{T: t, Ctx: ctx(t), Srv: xdstest.NewADSServer(t)}, res: map[string]map[string]proto.Message{}}
	f.c = newClient(t, bootstrapFor(t, f.Srv.Addr(), features...), opts...)
	return f
}

func nameOf(m proto.Message) string {
	switch r := m.(type) {
	case *listenerv3.Listener:
		return r.GetName()
	case *routev3.RouteConfiguration:
		return r.GetName()
	case *clusterv3.Cluster:
		return r.GetName()
	case *endpointv3.ClusterLoadAssignment:
		return r.GetClusterName()
	}
	panic("unknown resource type")
}

// response is a response of everything the server holds of typeURL, at a
// new version.
func (f *scripted) response(typeURL string) *discoveryv3.DiscoveryResponse {
	f.version++
	var all []proto.Message
	for _, name := range sortedKeys(f.res[typeURL]) {
		all = append(all, f.res[typeURL][name])
	}
	return xdstest.Response(typeURL, strconv.Itoa(f.version), all...)
}

// push adds or replaces res of typeURL and sends them all.
func (f *scripted) push(typeURL string, res ...proto.Message) {
	f.T.Helper()
	if f.res[typeURL] == nil {
		f.res[typeURL] = map[string]proto.Message{}
	}
	for _, r := range res {
		f.res[typeURL][nameOf(r)] = r
	}
	f.Send(f.st, f.response(typeURL))
}

// remove deletes names of typeURL and sends what is left.
func (f *scripted) remove(typeURL string, names ...string) {
	f.T.Helper()
	for _, n := range names {
		delete(f.res[typeURL], n)
	}
	f.Send(f.st, f.response(typeURL))
}

// pushErrors sends the resources of typeURL but for those errs name,
// which it reports as xRFC TP3 resource errors.
func (f *scripted) pushErrors(typeURL string, errs ...*discoveryv3.ResourceError) {
	f.T.Helper()
	resp := f.response(typeURL)
	failed := map[string]bool{}
	for _, e := range errs {
		failed[e.GetResourceName().GetName()] = true
	}
	kept := resp.Resources[:0]
	for _, name := range sortedKeys(f.res[typeURL]) {
		if !failed[name] {
			kept = append(kept, xdstest.Response(typeURL, "", f.res[typeURL][name]).Resources[0])
		}
	}
	resp.Resources, resp.ResourceErrors = kept, errs
	f.Send(f.st, resp)
}

// want reads the requests of typeURL until one subscribes to exactly names.
func (f *scripted) want(typeURL string, names ...string) {
	f.T.Helper()
	slices.Sort(names)
	var seen [][]string
	for {
		req, err := f.st.RecvType(f.Ctx, typeURL)
		if err != nil {
			f.T.Fatalf("waiting for a %s request for %v: %v; saw %v", typeURL, names, err, seen)
		}
		got := slices.Sorted(slices.Values(req.GetResourceNames()))
		if slices.Equal(got, names) {
			return
		}
		seen = append(seen, got)
	}
}

// stream takes the client's ADS stream and its request for listener.
func (f *scripted) stream(listener string) {
	f.T.Helper()
	f.st = f.NextStream()
	f.want(ldsURL, listener)
}

// baseline serves listener L → route configuration R (virtual host "*",
// routes to clusters A and B) → EDS clusters A and B, each with one
// endpoint, to a new manager, and returns it with its first config.
func (f *scripted) baseline(opts ...xdsconfig.Option) (*xdsconfig.Manager, *recorder, *xdsconfig.Config) {
	f.T.Helper()
	m, r := start(f.T, f.c, "L", "svc", opts...)
	f.stream("L")
	f.push(ldsURL, controlplane.Listener("L", "R"))
	f.want(rdsURL, "R")
	f.push(rdsURL, routes("R", vhost("vh", []string{"*"}, toCluster("/a", "A"), toCluster("/", "B"))))
	f.want(cdsURL, "A", "B")
	f.push(cdsURL, controlplane.Cluster("A", ""), controlplane.Cluster("B", ""))
	f.want(edsURL, "A", "B")
	f.push(edsURL, controlplane.Endpoints("A", "127.0.0.1:1"), controlplane.Endpoints("B", "127.0.0.1:2"))
	c := r.config()
	if !slices.Equal(addrs(c.Clusters["A"]), []string{"127.0.0.1:1"}) || !slices.Equal(addrs(c.Clusters["B"]), []string{"127.0.0.1:2"}) {
		f.T.Fatalf("baseline config %s", describe(c))
	}
	return m, r, c
}
