package xdsconfig_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/xdslens/xdslens/xdsclient/xdsresource/routeconfig"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"go.uber.org/goleak"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/xdslens/xdslens/internal/testing/testmain"
	"github.com/xdslens/xdslens/internal/testing/xdstest"
	"github.com/xdslens/xdslens/xdsclient"
	"github.com/xdslens/xdslens/xdsclient/bootstrap"
	"github.com/xdslens/xdslens/xdsclient/xdsconfig"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, goleak.Cleanup(testmain.Exit)) }

const (
	nodeID = "node-7"
	// nodeMark is how messages name the node.
	nodeMark = `node ID "node-7"`
)

var (
	ldsURL = xdsresource.ListenerType.TypeURL()
	rdsURL = xdsresource.RouteConfigType.TypeURL()
	cdsURL = xdsresource.ClusterType.TypeURL()
	edsURL = xdsresource.EndpointsType.TypeURL()
)

// bootstrapFor is a bootstrap of one insecure server at addr.
func bootstrapFor(t testing.TB, addr string, features ...string) *bootstrap.Config {
	return xdstest.Bootstrap{Servers: []string{addr}, Features: features, Node: `{"id": "` + nodeID + `"}`}.Parse(t)
}

// newClient is a client for tests whose cache changes wake xdstest.WaitFor.
func newClient(t testing.TB, cfg *bootstrap.Config, opts ...xdsclient.Option) *xdsclient.Client {
	notify := &xdsclient.Hooks{CacheStateChanged: func(xdsclient.CacheStateInfo) { xdstest.Notify() }}
	return xdstest.NewClient(t, cfg, xdstest.ClientOptions(append([]xdsclient.Option{xdsclient.WithHooks(notify)}, opts...)...)...)
}

// watched reports whether c has a cache entry (a watch) for typeURL name.
func watched(c *xdsclient.Client, typeURL, name string) bool {
	for _, e := range c.Dump() {
		if e.TypeURL == typeURL && e.Name == name {
			return true
		}
	}
	return false
}

// event is one call of a Watcher.
type event struct {
	cfg *xdsconfig.Config
	err error
}

// recorder is a Watcher that checks every call against the invariants of
// the package (no config tears, bounded messages naming the node) and
// queues it for the test.
type recorder struct {
	t       testing.TB
	ch      chan event
	stopped atomic.Bool // Stop has returned: no call may come
	// onUpdate, when set, runs inside Update.
	onUpdate func(*xdsconfig.Config)
}

func (r *recorder) Update(c *xdsconfig.Config) {
	if r.stopped.Load() {
		r.t.Errorf("Update after Stop returned")
	}
	if err := checkConfig(c); err != nil {
		r.t.Errorf("config breaks an invariant: %v", err)
	}
	if r.onUpdate != nil {
		r.onUpdate(c)
	}
	r.ch <- event{cfg: c}
}

func (r *recorder) Error(err error) {
	if r.stopped.Load() {
		r.t.Errorf("Error after Stop returned")
	}
	if err := checkErr(err); err != nil {
		r.t.Errorf("config error: %v", err)
	}
	r.ch <- event{err: err}
}

// checkErr checks what an RPC would see of err.
func checkErr(err error) error {
	st := status.Convert(err)
	switch {
	case st.Code() != codes.Unavailable:
		return fmt.Errorf("code %v, want UNAVAILABLE: %v", st.Code(), err)
	case len(st.Message()) > xdsconfig.MaxMessageLen:
		return fmt.Errorf("message of %d bytes", len(st.Message()))
	case !strings.Contains(st.Message(), nodeMark):
		return fmt.Errorf("message %q does not name the node", st.Message())
	}
	return nil
}

// checkConfig checks the invariants of a delivered config: every cluster
// that a route of the virtual host names has a slot (no tear, gRFC A74),
// every aggregate's leaves are usable leaves with slots, and every message
// is bounded and names the node.
func checkConfig(c *xdsconfig.Config) error {
	if c.NodeID != nodeID || c.Listener == nil || c.RouteConfig == nil || c.VirtualHost == nil {
		return fmt.Errorf("incomplete config %+v", c)
	}
	for _, r := range c.VirtualHost.Routes {
		var names []string
		switch r.Action.Kind {
		case routeconfig.ActionCluster:
			names = append(names, r.Action.Cluster)
		case routeconfig.ActionWeightedClusters:
			for _, wc := range r.Action.WeightedClusters {
				names = append(names, wc.Name)
			}
		}
		for _, n := range names {
			if c.Clusters[n] == nil {
				return fmt.Errorf("route to %q, which has no slot", n)
			}
		}
	}
	for name, s := range c.Clusters {
		switch {
		case s.Name != name:
			return fmt.Errorf("slot %q named %q", name, s.Name)
		case s.Err != nil:
			if err := checkErr(s.Err); err != nil {
				return fmt.Errorf("slot %q: %v", name, err)
			}
		case s.Cluster.Kind == xdsresource.ClusterAggregate:
			for _, l := range s.Leaves {
				if !c.Clusters[l].IsLeaf() {
					return fmt.Errorf("aggregate %q: leaf %q is not a usable leaf", name, l)
				}
			}
		default:
			if len(s.ResolutionNote) > xdsconfig.MaxMessageLen || !strings.Contains(s.ResolutionNote, nodeID) {
				return fmt.Errorf("slot %q: resolution note %q", name, s.ResolutionNote)
			}
		}
	}
	return nil
}

// start starts a manager of listener for authority on c, stopped when the
// test ends (before c is closed).
func start(t testing.TB, c *xdsclient.Client, listener, authority string, opts ...xdsconfig.Option) (*xdsconfig.Manager, *recorder) {
	r := &recorder{t: t, ch: make(chan event, 100)}
	m := xdsconfig.Watch(c, listener, authority, r, opts...)
	t.Cleanup(func() {
		m.Stop()
		r.stopped.Store(true)
	})
	return m, r
}

// next returns the next call of the Watcher.
func (r *recorder) next() event {
	r.t.Helper()
	select {
	case e := <-r.ch:
		return e
	case <-time.After(xdstest.Timeout):
		r.t.Fatalf("no Watcher call within %v", xdstest.Timeout)
	}
	return event{}
}

// config returns the next call, which must be an Update.
func (r *recorder) config() *xdsconfig.Config {
	r.t.Helper()
	e := r.next()
	if e.err != nil {
		r.t.Fatalf("Error(%v), want an Update", e.err)
	}
	return e.cfg
}

// failure returns the next call, which must be an Error.
func (r *recorder) failure() error {
	r.t.Helper()
	e := r.next()
	if e.err == nil {
		r.t.Fatalf("Update(%s), want an Error", describe(e.cfg))
	}
	return e.err
}

// until returns the first config that satisfies cond, skipping others
// (for control planes that send one change as several responses).
func (r *recorder) until(what string, cond func(*xdsconfig.Config) bool) *xdsconfig.Config {
	r.t.Helper()
	deadline := time.After(xdstest.Timeout)
	for {
		select {
		case e := <-r.ch:
			if e.cfg != nil && cond(e.cfg) {
				return e.cfg
			}
		case <-deadline:
			r.t.Fatalf("no config with %s within %v", what, xdstest.Timeout)
		}
	}
}

// none fails the test if a call is waiting.
func (r *recorder) none() {
	r.t.Helper()
	select {
	case e := <-r.ch:
		r.t.Fatalf("unexpected call: config %s, error %v", describe(e.cfg), e.err)
	default:
	}
}

// describe summarizes a config in one line: route config, virtual host,
// and each cluster as name=leaves, name=addresses or name=!error.
func describe(c *xdsconfig.Config) string {
	if c == nil {
		return "<nil>"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "rds %q vh %q", c.RouteConfigName, c.VirtualHost.Name)
	for _, name := range sortedKeys(c.Clusters) {
		s := c.Clusters[name]
		switch {
		case s.Err != nil:
			fmt.Fprintf(&b, " %s=!%v", name, s.Err)
		case s.Cluster.Kind == xdsresource.ClusterAggregate:
			fmt.Fprintf(&b, " %s=%v", name, s.Leaves)
		default:
			fmt.Fprintf(&b, " %s=%v", name, addrs(s))
		}
	}
	return b.String()
}

// addrs lists the addresses of a leaf slot's endpoints, nil if it has none.
func addrs(s *xdsconfig.ClusterConfig) []string {
	if s == nil || s.Endpoints == nil {
		return nil
	}
	var out []string
	for _, l := range s.Endpoints.Localities {
		for _, e := range l.Endpoints {
			out = append(out, e.Addresses...)
		}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }

// Resource builders beyond those of internal/xdswatch/demo/controlplane.

// logicalDNS returns a LOGICAL_DNS cluster of host:port.
func logicalDNS(name, host string, port uint32) *clusterv3.Cluster {
	return &clusterv3.Cluster{
		Name:                 name,
		ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_LOGICAL_DNS},
		LoadAssignment: &endpointv3.ClusterLoadAssignment{
			ClusterName: name,
			Endpoints: []*endpointv3.LocalityLbEndpoints{{LbEndpoints: []*endpointv3.LbEndpoint{{
				HostIdentifier: &endpointv3.LbEndpoint_Endpoint{Endpoint: &endpointv3.Endpoint{
					Address: &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
						Address: host, PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: port},
					}}},
				}},
			}}}},
		},
	}
}

// routes returns a route configuration of virtual hosts.
func routes(name string, vhosts ...*routev3.VirtualHost) *routev3.RouteConfiguration {
	return &routev3.RouteConfiguration{Name: name, VirtualHosts: vhosts}
}

// vhost returns a virtual host for domains with routes.
func vhost(name string, domains []string, rs ...*routev3.Route) *routev3.VirtualHost {
	return &routev3.VirtualHost{Name: name, Domains: domains, Routes: rs}
}

// toCluster is a route of the paths under prefix to cluster.
func toCluster(prefix, cluster string) *routev3.Route {
	return &routev3.Route{
		Match:  &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: prefix}},
		Action: &routev3.Route_Route{Route: &routev3.RouteAction{ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: cluster}}},
	}
}

// toWeighted is a route of the paths under prefix to clusters, given as
// name, weight, name, weight, ...
func toWeighted(prefix string, namesAndWeights ...any) *routev3.Route {
	wc := &routev3.WeightedCluster{}
	for i := 0; i < len(namesAndWeights); i += 2 {
		wc.Clusters = append(wc.Clusters, &routev3.WeightedCluster_ClusterWeight{
			Name: namesAndWeights[i].(string), Weight: wrapperspb.UInt32(uint32(namesAndWeights[i+1].(int))),
		})
	}
	return &routev3.Route{
		Match:  &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: prefix}},
		Action: &routev3.Route_Route{Route: &routev3.RouteAction{ClusterSpecifier: &routev3.RouteAction_WeightedClusters{WeightedClusters: wc}}},
	}
}

// toHeader is a route of the paths under prefix to the cluster a header
// names: it names no cluster ahead of the RPC.
func toHeader(prefix, header string) *routev3.Route {
	return &routev3.Route{
		Match:  &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: prefix}},
		Action: &routev3.Route_Route{Route: &routev3.RouteAction{ClusterSpecifier: &routev3.RouteAction_ClusterHeader{ClusterHeader: header}}},
	}
}

// noEndpoints is an EDS resource with no localities.
func noEndpoints(name string) *endpointv3.ClusterLoadAssignment {
	return &endpointv3.ClusterLoadAssignment{ClusterName: name}
}

// ctx is a context for one test.
func ctx(t testing.TB) context.Context { return xdstest.Context(t) }
