package xdsconfig

import (
	"fmt"
	"testing"
	"time"

	"github.com/xdslens/xdslens/xdsclient/xdsresource/routeconfig"

	"github.com/xdslens/xdslens/internal/testing/xdstest"
	"github.com/xdslens/xdslens/xdsclient"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
)

// benchWatcher signals each Update.
type benchWatcher chan *Config

func (w benchWatcher) Update(c *Config) { w <- c }
func (w benchWatcher) Error(err error)  { panic(err) }

// benchManager is a manager of a route configuration that names n EDS
// clusters, with every resource heard from.
func benchManager(b *testing.B, n int) (*Manager, benchWatcher) {
	return injected(b, routeConfig(n, 0), func(name string) *xdsresource.Cluster {
		return &xdsresource.Cluster{Name: name, Kind: xdsresource.ClusterEDS}
	})
}

// injected is a manager of listener L → rc whose clusters are made by
// cluster and whose endpoints each have one address, all heard from. Its
// xDS client subscribes on a server that never answers: the manager is
// handed decoded resources directly, so that what is measured or checked
// is the manager alone.
func injected(tb testing.TB, rc *routeconfig.Config, cluster func(name string) *xdsresource.Cluster) (*Manager, benchWatcher) {
	srv := xdstest.NewADSServer(tb)
	cfg := xdstest.Bootstrap{Servers: []string{srv.Addr()}, Node: `{"id": "bench"}`}.Parse(tb)
	c := xdstest.NewClient(tb, cfg, xdstest.ClientOptions(xdsclient.WithResourceTimeout(time.Hour))...)
	w := make(benchWatcher, 1)
	m := Watch(c, "L", "svc", w)
	tb.Cleanup(m.Stop)
	inject(m, &m.lds.dead, func() { m.onListener(resource(&xdsresource.Listener{Name: "L", RouteConfigName: "R"}), nil) })
	m.mu.Lock()
	rds := m.rds
	m.mu.Unlock()
	inject(m, &rds.dead, func() { m.onRouteConfig(rds, resource(rc), nil) })
	for {
		// Until every watch started has been heard from: each round of
		// clusters may name more (aggregates) or endpoints.
		waitFor(tb, m, func() bool { return !m.dirty })
		var pending int
		inject(m, new(bool), func() {
			for name, st := range m.clusters {
				if !st.heard {
					pending++
					m.onCluster(st, resource(cluster(name)), nil)
				}
			}
			for name, st := range m.endpoints {
				if !st.heard {
					pending++
					m.onEndpoints(st, resource(endpoints(name, 1)), nil)
				}
			}
		})
		if pending == 0 {
			break
		}
	}
	<-w
	return m, w
}

func inject(m *Manager, dead *bool, event func()) { m.handle(dead, event) }

// waitFor waits until cond holds, with mu held.
func waitFor(b testing.TB, m *Manager, cond func() bool) {
	for deadline := time.Now().Add(xdstest.Timeout); ; time.Sleep(time.Millisecond) {
		m.mu.Lock()
		ok := cond()
		m.mu.Unlock()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			b.Fatal("the manager did not get there")
		}
	}
}

func resource(v any) *xdsclient.Resource { return &xdsclient.Resource{Value: v, Server: "bench"} }

// routeConfig names n clusters c0..c(n-1), one route each; variant makes
// another resource with the same routes.
func routeConfig(n, variant int) *routeconfig.Config {
	vh := routeconfig.VirtualHost{Name: fmt.Sprintf("vh-%d", variant), Domains: []string{"*"}}
	for i := range n {
		vh.Routes = append(vh.Routes, routeconfig.Route{
			PathMatch: routeconfig.PathPrefix, Prefix: fmt.Sprintf("/svc%d/", i),
			Action: routeconfig.Action{Kind: routeconfig.ActionCluster, Cluster: fmt.Sprintf("c%d", i)},
		})
	}
	return &routeconfig.Config{Name: "R", VirtualHosts: []routeconfig.VirtualHost{vh}}
}

func endpoints(name string, port int) *xdsresource.ClusterLoadAssignment {
	return &xdsresource.ClusterLoadAssignment{ClusterName: name, Localities: []xdsresource.Locality{{
		Weight: 1, Endpoints: []xdsresource.Endpoint{{Addresses: []string{fmt.Sprintf("127.0.0.1:%d", port)}, Weight: 1}},
	}}}
}

// BenchmarkUpdate measures one update of a manager whose route
// configuration names 10,000 clusters, from the event to the new config
// delivered: the endpoints of one cluster change, or a new route
// configuration naming the same clusters comes.
func BenchmarkUpdate(b *testing.B) {
	const n = 10000
	b.Run("eds-change", func(b *testing.B) {
		m, w := benchManager(b, n)
		m.mu.Lock()
		st := m.endpoints["c0"]
		m.mu.Unlock()
		eps := [2]*xdsresource.ClusterLoadAssignment{endpoints("c0", 2), endpoints("c0", 3)}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			inject(m, &st.dead, func() { m.onEndpoints(st, resource(eps[i%2]), nil) })
			<-w
			i++
		}
	})
	b.Run("route-config-change", func(b *testing.B) {
		m, w := benchManager(b, n)
		m.mu.Lock()
		rds := m.rds
		m.mu.Unlock()
		rcs := [2]*routeconfig.Config{routeConfig(n, 1), routeConfig(n, 2)}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			inject(m, &rds.dead, func() { m.onRouteConfig(rds, resource(rcs[i%2]), nil) })
			<-w
			i++
		}
	})
}
