package xdsconfig_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/xdslens/xdslens/xdsclient/xdsresource/routeconfig"

	"github.com/xdslens/xdslens/xdsclient/xdsconfig"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
)

func TestDiff(t *testing.T) {
	lis, lis2 := &xdsresource.Listener{Name: "l"}, &xdsresource.Listener{Name: "l"}
	rc := &routeconfig.Config{Name: "r", VirtualHosts: []routeconfig.VirtualHost{{Name: "vh", Domains: []string{"*"}}}}
	rcSame := &routeconfig.Config{Name: "r", VirtualHosts: []routeconfig.VirtualHost{{Name: "vh", Domains: []string{"*"}}, {Name: "other", Domains: []string{"x"}}}}
	rcOther := &routeconfig.Config{Name: "r", VirtualHosts: []routeconfig.VirtualHost{{Name: "vh", Domains: []string{"*", "y"}}}}
	c1 := &xdsresource.Cluster{Name: "a", Kind: xdsresource.ClusterEDS}
	eps, eps2 := &xdsresource.ClusterLoadAssignment{ClusterName: "a"}, &xdsresource.ClusterLoadAssignment{ClusterName: "a"}
	slotA := &xdsconfig.ClusterConfig{Name: "a", Cluster: c1, Endpoints: eps, ResolutionNote: "xDS node ID:n"}
	base := &xdsconfig.Config{ListenerName: "l", Listener: lis, RouteConfigName: "r", RouteConfig: rc, VirtualHost: &rc.VirtualHosts[0],
		Clusters: map[string]*xdsconfig.ClusterConfig{"a": slotA, "b": {Name: "b", Err: errors.New("x")}}}
	with := func(f func(c *xdsconfig.Config)) *xdsconfig.Config {
		c := *base
		c.Clusters = map[string]*xdsconfig.ClusterConfig{}
		for k, v := range base.Clusters {
			c.Clusters[k] = v
		}
		f(&c)
		return &c
	}
	slot := func(f func(s *xdsconfig.ClusterConfig)) *xdsconfig.ClusterConfig {
		s := *slotA
		f(&s)
		return &s
	}
	for _, tc := range []struct {
		name     string
		from, to *xdsconfig.Config
		want     xdsconfig.Changes
	}{
		{"same", base, base, xdsconfig.Changes{}},
		{"equal slot, another pointer", base, with(func(c *xdsconfig.Config) { c.Clusters["a"] = slot(func(*xdsconfig.ClusterConfig) {}) }), xdsconfig.Changes{}},
		{"from nothing", nil, base, xdsconfig.Changes{Listener: true, RouteConfig: true, VirtualHost: true, Added: []string{"a", "b"}}},
		{"to nothing", base, nil, xdsconfig.Changes{Listener: true, RouteConfig: true, VirtualHost: true, Removed: []string{"a", "b"}}},
		{"new listener", base, with(func(c *xdsconfig.Config) { c.Listener = lis2 }), xdsconfig.Changes{Listener: true}},
		{"new route config, same virtual host", base, with(func(c *xdsconfig.Config) { c.RouteConfig, c.VirtualHost = rcSame, &rcSame.VirtualHosts[0] }),
			xdsconfig.Changes{RouteConfig: true}},
		{"virtual host changed", base, with(func(c *xdsconfig.Config) { c.RouteConfig, c.VirtualHost = rcOther, &rcOther.VirtualHosts[0] }),
			xdsconfig.Changes{RouteConfig: true, VirtualHost: true}},
		{"RDS name", base, with(func(c *xdsconfig.Config) { c.RouteConfigName = "r2" }), xdsconfig.Changes{RouteConfig: true}},
		{"endpoints", base, with(func(c *xdsconfig.Config) {
			c.Clusters["a"] = slot(func(s *xdsconfig.ClusterConfig) { s.Endpoints = eps2 })
		}),
			xdsconfig.Changes{Changed: []string{"a"}}},
		{"note", base, with(func(c *xdsconfig.Config) {
			c.Clusters["a"] = slot(func(s *xdsconfig.ClusterConfig) { s.ResolutionNote = "x" })
		}),
			xdsconfig.Changes{Changed: []string{"a"}}},
		{"error message", base, with(func(c *xdsconfig.Config) { c.Clusters["b"] = &xdsconfig.ClusterConfig{Name: "b", Err: errors.New("y")} }),
			xdsconfig.Changes{Changed: []string{"b"}}},
		{"leaves", base, with(func(c *xdsconfig.Config) {
			c.Clusters["a"] = slot(func(s *xdsconfig.ClusterConfig) { s.Leaves = []string{"z"} })
		}),
			xdsconfig.Changes{Changed: []string{"a"}}},
		{"added and removed", base, with(func(c *xdsconfig.Config) {
			delete(c.Clusters, "b")
			c.Clusters["c"] = &xdsconfig.ClusterConfig{Name: "c"}
		}),
			xdsconfig.Changes{Added: []string{"c"}, Removed: []string{"b"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := xdsconfig.Diff(tc.from, tc.to)
			if got.Listener != tc.want.Listener || got.RouteConfig != tc.want.RouteConfig || got.VirtualHost != tc.want.VirtualHost ||
				!slices.Equal(got.Added, tc.want.Added) || !slices.Equal(got.Removed, tc.want.Removed) || !slices.Equal(got.Changed, tc.want.Changed) {
				t.Errorf("Diff = %s, want %s", got, tc.want)
			}
			if got.Empty() != (tc.want.String() == "nothing") {
				t.Errorf("Empty() = %v for %s", got.Empty(), got)
			}
		})
	}
	if got, want := (xdsconfig.Changes{RouteConfig: true, VirtualHost: true, Added: []string{"b"}, Removed: []string{"a"}}).String(),
		"route config, virtual host, clusters +[b] -[a]"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}
