package xdsconfig_test

// The happy paths, against a go-control-plane management server.

import (
	"net"
	"slices"
	"strconv"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/xdslens/xdslens/internal/testing/xdstest"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/controlplane"
	"github.com/xdslens/xdslens/xdsclient"
	"github.com/xdslens/xdslens/xdsclient/xdsconfig"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
)

// cp is a client of a go-control-plane server.
type cp struct {
	t   *testing.T
	srv *controlplane.Server
	c   *xdsclient.Client
}

func newCP(t *testing.T) *cp {
	srv, err := controlplane.Start(ctx(t), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	return &cp{t: t, srv: srv, c: newClient(t, bootstrapFor(t, srv.Addr()))}
}

// set replaces the server's configuration with res at version.
func (f *cp) set(version string, res ...proto.Message) {
	f.t.Helper()
	if err := f.srv.SetResources(ctx(f.t), nodeID, version, res...); err != nil {
		f.t.Fatal(err)
	}
}

// waitUnwatched waits until the client has no watch of typeURL name.
func (f *cp) waitUnwatched(typeURL, name string) {
	f.t.Helper()
	xdstest.WaitFor(f.t, ctx(f.t), typeURL+" "+name+" unwatched", func() bool { return !watched(f.c, typeURL, name) })
}

func TestConfigRDS(t *testing.T) {
	f := newCP(t)
	f.set("1",
		controlplane.Listener("L", "R"),
		controlplane.RouteConfig("R", []string{"*"}, "C"),
		controlplane.Cluster("C", "C-eds"),
		controlplane.Endpoints("C-eds", "127.0.0.1:4001", "127.0.0.1:4002"))
	_, r := start(t, f.c, "L", "svc.example.com")
	c := r.config()
	if c.ListenerName != "L" || c.Listener.Name != "L" || c.RouteConfigName != "R" || c.RouteConfig.Name != "R" ||
		c.VirtualHost != &c.RouteConfig.VirtualHosts[0] || c.NodeID != nodeID {
		t.Errorf("config %+v", c)
	}
	s := c.Clusters["C"]
	if len(c.Clusters) != 1 || !s.IsLeaf() || s.Cluster.EDSName() != "C-eds" || s.Server != f.srv.Addr() ||
		!slices.Equal(addrs(s), []string{"127.0.0.1:4001", "127.0.0.1:4002"}) {
		t.Errorf("clusters: %s; server %q", describe(c), s.Server)
	}
	if s.ResolutionNote != "xDS node ID:"+nodeID {
		t.Errorf("resolution note %q, want the node ID", s.ResolutionNote)
	}
	if c.ListenerVersion != "1" || c.RouteConfigVersion != "1" || s.Version != "1" || s.EndpointsVersion != "1" {
		t.Errorf("versions: listener %q, route config %q, cluster %q, endpoints %q; want 1 each",
			c.ListenerVersion, c.RouteConfigVersion, s.Version, s.EndpointsVersion)
	}

	// A change of endpoints is a new config that shares the rest.
	f.set("2",
		controlplane.Listener("L", "R"),
		controlplane.RouteConfig("R", []string{"*"}, "C"),
		controlplane.Cluster("C", "C-eds"),
		controlplane.Endpoints("C-eds", "127.0.0.1:4003"))
	c2 := r.until("new endpoints", func(c *xdsconfig.Config) bool {
		return slices.Equal(addrs(c.Clusters["C"]), []string{"127.0.0.1:4003"})
	})
	if ch := xdsconfig.Diff(c, c2); ch.Listener || ch.RouteConfig || ch.VirtualHost || !slices.Equal(ch.Changed, []string{"C"}) {
		t.Errorf("Diff = %s, want only cluster C changed", ch)
	}
	// The resources resent unchanged keep the version that brought them.
	if s2 := c2.Clusters["C"]; c2.ListenerVersion != "1" || c2.RouteConfigVersion != "1" || s2.Version != "1" || s2.EndpointsVersion != "2" {
		t.Errorf("versions: listener %q, route config %q, cluster %q, endpoints %q; want 1, 1, 1, 2",
			c2.ListenerVersion, c2.RouteConfigVersion, s2.Version, s2.EndpointsVersion)
	}
}

// TestConfigVersions: a config names the versions of the responses that
// carried its listener and route configuration, RDS or inline.
func TestConfigVersions(t *testing.T) {
	f := newCP(t)
	f.set("1",
		controlplane.Listener("L", "R"),
		controlplane.RouteConfig("R", []string{"*"}, "C"),
		controlplane.Cluster("C", ""), controlplane.Endpoints("C", "127.0.0.1:4001"))
	_, r := start(t, f.c, "L", "svc")
	if c := r.config(); c.ListenerVersion != "1" || c.RouteConfigVersion != "1" {
		t.Errorf("versions: listener %q, route config %q; want 1 and 1", c.ListenerVersion, c.RouteConfigVersion)
	}
	f.set("2",
		controlplane.Listener("L", "R"),
		controlplane.RouteConfig("R", []string{"*"}, "D"),
		controlplane.Cluster("D", ""), controlplane.Endpoints("D", "127.0.0.1:4002"))
	c := r.until("route config version 2", func(c *xdsconfig.Config) bool { return c.Clusters["D"] != nil })
	if c.RouteConfigVersion != "2" {
		t.Errorf("route config version %q, want 2", c.RouteConfigVersion)
	}
	f.set("3",
		controlplane.ListenerInlineRoute("L", controlplane.RouteConfig("inline", []string{"*"}, "D")),
		controlplane.Cluster("D", ""), controlplane.Endpoints("D", "127.0.0.1:4002"))
	c = r.until("the inline route config", func(c *xdsconfig.Config) bool { return c.RouteConfigName == "" })
	if c.ListenerVersion != "3" || c.RouteConfigVersion != "3" {
		t.Errorf("versions: listener %q, inline route config %q; want 3 and 3", c.ListenerVersion, c.RouteConfigVersion)
	}
}

func TestConfigAggregateChain(t *testing.T) {
	f := newCP(t)
	f.set("1",
		controlplane.Listener("L", "R"),
		controlplane.RouteConfig("R", []string{"*"}, "top"),
		controlplane.AggregateCluster("top", "mid", "c3"),
		controlplane.AggregateCluster("mid", "c1", "c2"),
		controlplane.Cluster("c1", ""), controlplane.Cluster("c2", ""), controlplane.Cluster("c3", ""),
		controlplane.Endpoints("c1", "127.0.0.1:1"), controlplane.Endpoints("c2", "127.0.0.1:2"), controlplane.Endpoints("c3", "127.0.0.1:3"))
	_, r := start(t, f.c, "L", "svc")
	c := r.config()
	if got := c.Clusters["top"].Leaves; !slices.Equal(got, []string{"c1", "c2", "c3"}) {
		t.Errorf("top leaves %v, want [c1 c2 c3]", got)
	}
	if got := c.Clusters["mid"].Leaves; !slices.Equal(got, []string{"c1", "c2"}) {
		t.Errorf("mid leaves %v, want [c1 c2]", got)
	}
	if len(c.Clusters) != 5 || !slices.Equal(addrs(c.Clusters["c2"]), []string{"127.0.0.1:2"}) {
		t.Errorf("clusters %s", describe(c))
	}

	// The aggregate changes its children: the one it dropped is no longer
	// watched once the config without it is delivered.
	f.set("2",
		controlplane.Listener("L", "R"),
		controlplane.RouteConfig("R", []string{"*"}, "top"),
		controlplane.AggregateCluster("top", "c3", "mid"),
		controlplane.AggregateCluster("mid", "c1"),
		controlplane.Cluster("c1", ""), controlplane.Cluster("c3", ""),
		controlplane.Endpoints("c1", "127.0.0.1:1"), controlplane.Endpoints("c3", "127.0.0.1:3"))
	r.until("the new order", func(c *xdsconfig.Config) bool {
		return slices.Equal(c.Clusters["top"].Leaves, []string{"c3", "c1"}) && c.Clusters["c2"] == nil
	})
	f.waitUnwatched(cdsURL, "c2")
	f.waitUnwatched(edsURL, "c2")
}

func TestConfigWeightedClusters(t *testing.T) {
	f := newCP(t)
	f.set("1",
		controlplane.Listener("L", "R"),
		routes("R", vhost("vh", []string{"*"},
			toHeader("/h", "x-cluster"),
			toWeighted("/w", "a", 1, "b", 3),
			toCluster("/", "b"))),
		controlplane.Cluster("a", ""), controlplane.Cluster("b", ""),
		controlplane.Endpoints("a", "127.0.0.1:1"), controlplane.Endpoints("b", "127.0.0.1:2"))
	_, r := start(t, f.c, "L", "svc")
	c := r.config()
	if got := sortedKeys(c.Clusters); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("clusters %v, want [a b] (a cluster_header route names none)", got)
	}
}

func TestConfigInlineRouteConfig(t *testing.T) {
	f := newCP(t)
	f.set("1",
		controlplane.ListenerInlineRoute("L", controlplane.RouteConfig("inline", []string{"*"}, "C")),
		controlplane.Cluster("C", ""), controlplane.Endpoints("C", "127.0.0.1:1"))
	_, r := start(t, f.c, "L", "svc")
	c := r.config()
	if c.RouteConfigName != "" || c.RouteConfig != c.Listener.InlineRouteConfig || c.Clusters["C"] == nil {
		t.Errorf("config: rds %q, route config %p (listener's inline %p), %s", c.RouteConfigName, c.RouteConfig, c.Listener.InlineRouteConfig, describe(c))
	}
	for _, e := range f.c.Dump() {
		if e.TypeURL == rdsURL {
			t.Errorf("route configuration %q watched though it is inline", e.Name)
		}
	}
}

func TestConfigRDSNameChange(t *testing.T) {
	f := newCP(t)
	f.set("1",
		controlplane.Listener("L", "R1"),
		controlplane.RouteConfig("R1", []string{"*"}, "A"),
		controlplane.Cluster("A", ""), controlplane.Endpoints("A", "127.0.0.1:1"))
	_, r := start(t, f.c, "L", "svc")
	if c := r.config(); c.RouteConfigName != "R1" || c.Clusters["A"] == nil {
		t.Fatalf("first config %s", describe(c))
	}
	f.set("2",
		controlplane.Listener("L", "R2"),
		controlplane.RouteConfig("R2", []string{"*"}, "B"),
		controlplane.Cluster("A", ""), controlplane.Cluster("B", ""),
		controlplane.Endpoints("A", "127.0.0.1:1"), controlplane.Endpoints("B", "127.0.0.1:2"))
	c := r.config()
	if c.RouteConfigName != "R2" || c.Listener.RouteConfigName != "R2" || len(c.Clusters) != 1 || c.Clusters["B"] == nil {
		t.Errorf("config after the change: %s", describe(c))
	}
	f.waitUnwatched(rdsURL, "R1")
	f.waitUnwatched(cdsURL, "A")
	f.waitUnwatched(edsURL, "A")
}

func TestConfigVirtualHostPerAuthority(t *testing.T) {
	f := newCP(t)
	f.set("1",
		controlplane.Listener("L", "R"),
		routes("R",
			vhost("any", []string{"*"}, toCluster("/", "c-any")),
			vhost("prefix", []string{"a.*"}, toCluster("/", "c-prefix")),
			vhost("suffix", []string{"*.example.com"}, toCluster("/", "c-suffix")),
			vhost("exact", []string{"A.example.com"}, toCluster("/", "c-exact"))),
		controlplane.Cluster("c-any", "e"), controlplane.Cluster("c-prefix", "e"),
		controlplane.Cluster("c-suffix", "e"), controlplane.Cluster("c-exact", "e"),
		controlplane.Endpoints("e", "127.0.0.1:1"))
	for _, tc := range []struct{ authority, vhost string }{
		{"a.example.com", "exact"},
		{"b.example.com", "suffix"},
		{"a.org", "prefix"},
		{"other:8080", "any"},
	} {
		_, r := start(t, f.c, "L", tc.authority)
		c := r.config()
		if c.VirtualHost.Name != tc.vhost || len(c.Clusters) != 1 || c.Clusters["c-"+tc.vhost] == nil {
			t.Errorf("authority %q: %s, want virtual host %q and its cluster only", tc.authority, describe(c), tc.vhost)
		}
	}
}

func TestConfigLogicalDNSLocalhost(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer lis.Close()
	port := lis.Addr().(*net.TCPAddr).Port
	f := newCP(t)
	f.set("1",
		controlplane.Listener("L", "R"),
		controlplane.RouteConfig("R", []string{"*"}, "dns"),
		logicalDNS("dns", "localhost", uint32(port)))
	_, r := start(t, f.c, "L", "svc")
	s := r.config().Clusters["dns"]
	want := "127.0.0.1:" + strconv.Itoa(port)
	if !s.IsLeaf() || s.Cluster.Kind != xdsresource.ClusterLogicalDNS || !slices.Contains(addrs(s), want) {
		t.Fatalf("slot %+v: addresses %v, want %s among them", s, addrs(s), want)
	}
	l := s.Endpoints.Localities
	if len(l) != 1 || l[0].Priority != 0 || len(l[0].Endpoints) != 1 || l[0].Endpoints[0].Hostname != "localhost" {
		t.Errorf("endpoints %+v, want one locality of one endpoint of every address", l)
	}
}

// A route that moves from cluster A to cluster B: A stays watched until the
// config with B is delivered, then it and its endpoints are unwatched.
func TestConfigDroppedClusterUnwatched(t *testing.T) {
	f := newCP(t)
	f.set("1",
		controlplane.Listener("L", "R"),
		controlplane.RouteConfig("R", []string{"*"}, "A"),
		controlplane.Cluster("A", "A-eds"), controlplane.Endpoints("A-eds", "127.0.0.1:1"))
	_, r := start(t, f.c, "L", "svc")
	r.config()
	f.set("2",
		controlplane.Listener("L", "R"),
		controlplane.RouteConfig("R", []string{"*"}, "B"),
		controlplane.Cluster("A", "A-eds"), controlplane.Cluster("B", ""),
		controlplane.Endpoints("A-eds", "127.0.0.1:1"), controlplane.Endpoints("B", "127.0.0.1:2"))
	c := r.until("cluster B", func(c *xdsconfig.Config) bool { return c.Clusters["B"] != nil })
	if c.Clusters["A"] != nil {
		t.Errorf("config %s still has A", describe(c))
	}
	f.waitUnwatched(cdsURL, "A")
	f.waitUnwatched(edsURL, "A-eds")
	if !watched(f.c, cdsURL, "B") || !watched(f.c, edsURL, "B") {
		t.Error("B is not watched")
	}
}
