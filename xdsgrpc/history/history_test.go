package history_test

import (
	"errors"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/xdslens/xdslens/xdsclient/xdsresource/routeconfig"

	"github.com/xdslens/xdslens/xdsclient/xdsresource/filterconfig"
	"github.com/xdslens/xdslens/xdsclient/xdsresource/lbpolicy"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdslens/xdslens/internal/testing/testmain"
	"github.com/xdslens/xdslens/xdsclient/xdsconfig"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
	"github.com/xdslens/xdslens/xdsgrpc/history"
)

// TestMain ends the test binary without the race detector's pause at exit.
func TestMain(m *testing.M) { testmain.Run(m) }

func toCluster(name, prefix string) routeconfig.Route {
	return routeconfig.Route{PathMatch: routeconfig.PathPrefix, Prefix: prefix, Action: routeconfig.Action{Kind: routeconfig.ActionCluster, Cluster: name}}
}

// config returns a config of routes over EDS clusters with one endpoint
// each, named by the routes.
func config(routes ...routeconfig.Route) *xdsconfig.Config {
	// Each route's index as received is its position, as when gRPC keeps
	// every route of the resource.
	routes = slices.Clone(routes)
	for i := range routes {
		routes[i].Index = i
	}
	vh := &routeconfig.VirtualHost{Name: "vh", Domains: []string{"*"}, Routes: routes}
	c := &xdsconfig.Config{ListenerName: "L", Listener: &xdsresource.Listener{Name: "L", RouteConfigName: "R"}, ListenerVersion: "1",
		RouteConfigName: "R", RouteConfig: &routeconfig.Config{Name: "R"}, RouteConfigVersion: "1", VirtualHost: vh,
		Clusters: map[string]*xdsconfig.ClusterConfig{}}
	for _, r := range routes {
		name := r.Action.Cluster
		c.Clusters[name] = &xdsconfig.ClusterConfig{Name: name, Version: "1", EndpointsVersion: "1",
			Cluster:   &xdsresource.Cluster{Name: name, Kind: xdsresource.ClusterEDS, Config: lbpolicy.Config{LBPolicy: "round_robin"}},
			Endpoints: &xdsresource.ClusterLoadAssignment{ClusterName: name, Localities: []xdsresource.Locality{{Weight: 1, Endpoints: []xdsresource.Endpoint{{Addresses: []string{name + ":1"}}}}}}}
	}
	return c
}

// changes returns the changes from a to b in one line each.
func changes(a, b *xdsconfig.Config) []string {
	cs, omitted := history.Changes(a, b)
	var out []string
	for _, c := range cs {
		out = append(out, fmt.Sprintf("%s %s %s: %s -> %s", c.Kind, c.Name, c.Op, c.Before, c.After))
	}
	if omitted > 0 {
		out = append(out, fmt.Sprintf("%d omitted", omitted))
	}
	return out
}

func TestChangesAlignRoutes(t *testing.T) {
	a, b, c := toCluster("a", "/a/"), toCluster("b", "/b/"), toCluster("c", "/c/")
	named := toCluster("b", "/named/")
	named.Name = "n"
	for _, tc := range []struct {
		name     string
		from, to []routeconfig.Route
		want     []string
	}{
		{"insert at the front", []routeconfig.Route{a, b}, []routeconfig.Route{c, a, b}, []string{
			`route #0 added:  -> prefix "/c/" -> cluster "c"`,
			`cluster c added:  -> eds "c" round_robin, endpoints [c:1]`,
		}},
		{"remove in the middle", []routeconfig.Route{a, b, c}, []routeconfig.Route{a, c}, []string{
			`route #1 removed: prefix "/b/" -> cluster "b" -> `,
			`cluster b removed: eds "b" round_robin, endpoints [b:1] -> `,
		}},
		{"change one", []routeconfig.Route{a, b, c}, []routeconfig.Route{a, named, c}, []string{
			`route n changed: prefix "/b/" -> cluster "b" -> prefix "/named/" -> cluster "b"`,
		}},
		{"swap", []routeconfig.Route{a, b}, []routeconfig.Route{b, a}, []string{
			`route #0 removed: prefix "/a/" -> cluster "a" -> `,
			`route #1 added:  -> prefix "/a/" -> cluster "a"`,
		}},
		{"replace all", []routeconfig.Route{a}, []routeconfig.Route{b, c}, []string{
			`route #0 changed: prefix "/a/" -> cluster "a" -> prefix "/b/" -> cluster "b"`,
			`route #1 added:  -> prefix "/c/" -> cluster "c"`,
			`cluster b added:  -> eds "b" round_robin, endpoints [b:1]`,
			`cluster c added:  -> eds "c" round_robin, endpoints [c:1]`,
			`cluster a removed: eds "a" round_robin, endpoints [a:1] -> `,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := changes(config(tc.from...), config(tc.to...))
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("changes:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

func TestChangesFilterOverrides(t *testing.T) {
	with := func(v string) routeconfig.Route {
		r := toCluster("a", "/")
		r.FilterOverrides = filterconfig.Overrides{"fault": {TypeURL: "t", Config: &anypb.Any{TypeUrl: "t", Value: []byte(v)}}}
		return r
	}
	got := changes(config(with("1")), config(with("2")))
	want := `route #0 changed: prefix "/" -> cluster "a", HTTP filter overrides [fault] -> prefix "/" -> cluster "a", HTTP filter overrides [fault] (HTTP filter override configs changed)`
	if len(got) != 1 || got[0] != want {
		t.Errorf("changes %q, want %q", got, want)
	}
	if got := changes(config(with("1")), config(with("1"))); len(got) != 0 {
		t.Errorf("the same overrides: changes %q", got)
	}
}

func TestChangesListenerAndClusters(t *testing.T) {
	from := config(toCluster("a", "/"))
	to := config(toCluster("a", "/"))
	to.VirtualHost = from.VirtualHost
	to.Listener = &xdsresource.Listener{Name: "L", RouteConfigName: "R", MaxStreamDuration: time.Second,
		HTTPFilters: []filterconfig.Filter{{Name: "fault"}, {Name: "router"}}}
	to.Clusters["a"].Err = status.Error(codes.Unavailable, "cds gone")
	to.Clusters["a"].Cluster = nil
	want := []string{
		`listener L changed: RDS "R", HTTP filters [] -> RDS "R", HTTP filters [fault router], max_stream_duration 1s`,
		`cluster a changed: eds "a" round_robin, endpoints [a:1] -> error UNAVAILABLE: rpc error: code = Unavailable desc = cds gone`,
	}
	if got := changes(from, to); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("changes:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// A resource resent with nothing that routes changed: no change.
	again := *to
	again.Listener = &xdsresource.Listener{Name: "L", RouteConfigName: "R", MaxStreamDuration: time.Second,
		HTTPFilters: []filterconfig.Filter{{Name: "fault"}, {Name: "router"}}}
	if got := changes(to, &again); len(got) != 0 {
		t.Errorf("changes %q, want none", got)
	}
}

func TestRecorderKeepsTheLast(t *testing.T) {
	r := history.NewRecorder("xdslens:///L", "L", 3)
	if c := r.Channel(); c.Capacity != 3 || c.Recorded != 0 || len(c.Entries) != 0 {
		t.Errorf("empty: %+v", c)
	}
	for i := range 7 {
		if i == 4 {
			r.Error(errors.New("boom"))
			continue
		}
		r.Config(config(toCluster("c"+strconv.Itoa(i), "/")))
	}
	c := r.Channel()
	if c.Target != "xdslens:///L" || c.Listener != "L" || c.Recorded != 7 || len(c.Entries) != 3 {
		t.Fatalf("channel %+v", c)
	}
	for i, e := range c.Entries {
		if e.Seq != uint64(5+i) {
			t.Errorf("entry %d has seq %d, want %d", i, e.Seq, 5+i)
		}
	}
	if e := c.Entries[0]; e.Event != history.EventConfigError || e.Error == nil || e.Error.Code != "UNKNOWN" || e.Error.Message != "boom" {
		t.Errorf("error entry %+v", e)
	}
	// Each config is compared with the one before the error.
	if got := c.Entries[1].Changes; len(got) != 3 || got[0].Name != "#0" || got[0].Op != history.OpChanged ||
		got[1].Name != "c5" || got[1].Op != history.OpAdded || got[2].Name != "c3" || got[2].Op != history.OpRemoved {
		t.Errorf("changes after the error: %+v", got)
	}
	if r := history.NewRecorder("t", "l", 0); r.Channel().Capacity != 1 {
		t.Errorf("a size of 0 keeps %d entries, want 1", r.Channel().Capacity)
	}
}

// hostileConfig is a config whose every string is long and whose clusters
// and routes outnumber what an entry lists.
func hostileConfig(n int, seed string) *xdsconfig.Config {
	long := strings.Repeat(seed, 4096)
	var routes []routeconfig.Route
	for i := range n {
		r := toCluster(fmt.Sprint(long, i), fmt.Sprint("/", long, i))
		r.Name = fmt.Sprint(long, i)
		routes = append(routes, r)
	}
	c := config(routes...)
	c.ListenerVersion, c.RouteConfigVersion = long, long
	for _, s := range c.Clusters {
		s.Version, s.EndpointsVersion = long, long
		s.ResolutionNote = long + "\n" + long
	}
	return c
}

// TestEntryBounds feeds a recorder configs of long strings and many
// clusters and routes: every string of an entry is cut to MaxText bytes,
// on one line, and the lists to their maximums, counting the rest.
func TestEntryBounds(t *testing.T) {
	r := history.NewRecorder("t", "l", 2)
	r.Config(hostileConfig(100, "x"))
	r.Config(hostileConfig(100, "y"))
	r.Error(status.Error(codes.Unavailable, strings.Repeat("e\n", 4096)))
	for _, e := range r.Channel().Entries {
		if len(e.Changes) > history.MaxChanges || len(e.Resources) > history.MaxResources {
			t.Errorf("entry %d: %d changes, %d resources", e.Seq, len(e.Changes), len(e.Resources))
		}
		if e.Event == history.EventConfig && (e.ChangesOmitted == 0 || e.ResourcesOmitted == 0 ||
			len(e.Changes)+e.ChangesOmitted != 300 || len(e.Resources)+e.ResourcesOmitted != 202) {
			t.Errorf("entry %d: %d changes + %d omitted, %d resources + %d omitted; want 300 and 202", e.Seq,
				len(e.Changes), e.ChangesOmitted, len(e.Resources), e.ResourcesOmitted)
		}
		var texts []string
		if e.Error != nil {
			texts = append(texts, e.Error.Message)
		}
		for _, c := range e.Changes {
			texts = append(texts, c.Name, c.Before, c.After)
		}
		for _, res := range e.Resources {
			texts = append(texts, res.Name, res.Version)
		}
		texts = append(texts, e.RouteConfig, e.VirtualHost)
		for _, s := range texts {
			if len(s) > history.MaxText || strings.ContainsAny(s, "\r\n") {
				t.Errorf("entry %d: a string of %d bytes: %.80q", e.Seq, len(s), s)
			}
		}
	}
}

// TestEntryCost measures the heap an entry holds: for hostile configs, at
// most the bound the package documents (45 KiB); for a small config, about
// 1 KiB.
func TestEntryCost(t *testing.T) {
	const n = 64
	// Each config is made, recorded and dropped: what stays is the
	// entries, and the recorder's last config, which the first one
	// measured (kept before) stands for.
	measure := func(configs func(i int) *xdsconfig.Config) float64 {
		r := history.NewRecorder("t", "l", n+1)
		r.Config(configs(0))
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		for i := 1; i <= n; i++ {
			r.Config(configs(i))
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		runtime.KeepAlive(r)
		return (float64(after.HeapAlloc) - float64(before.HeapAlloc)) / n
	}
	hostile := measure(func(i int) *xdsconfig.Config { return hostileConfig(40, strconv.Itoa(i%10)) })
	small := measure(func(i int) *xdsconfig.Config {
		return config(toCluster("a", "/a/"), toCluster(fmt.Sprint("b", i), "/"))
	})
	t.Logf("bytes per entry: hostile %.0f, small %.0f", hostile, small)
	if hostile > 45<<10 {
		t.Errorf("a hostile entry holds %.0f bytes, more than the 45 KiB documented", hostile)
	}
	if small > 1536 {
		t.Errorf("a small entry holds %.0f bytes, more than about 1 KiB", small)
	}
}

// TestResourcesOfUpdates records a series of configs, each changing the
// last as an update does (endpoints, an EDS failure and its end, a new
// cluster resource, a cluster added and removed, versions), and checks
// each entry's resources against those a new recorder lists for the same
// config.
func TestResourcesOfUpdates(t *testing.T) {
	var routes []routeconfig.Route
	for i := range 40 {
		routes = append(routes, toCluster(fmt.Sprintf("c%02d", i), fmt.Sprint("/", i, "/")))
	}
	cfg := config(routes...)
	// c01 and c02 share an EDS resource.
	for _, name := range []string{"c01", "c02"} {
		s := *cfg.Clusters[name]
		c := *s.Cluster
		c.EDSServiceName = "shared"
		s.Cluster = &c
		cfg.Clusters[name] = &s
	}
	update := func(name string, f func(s *xdsconfig.ClusterConfig)) *xdsconfig.Config {
		next := *cfg
		next.Clusters = maps.Clone(cfg.Clusters)
		if f == nil {
			delete(next.Clusters, name)
		} else {
			s := &xdsconfig.ClusterConfig{}
			if old := cfg.Clusters[name]; old != nil {
				*s = *old
			}
			f(s)
			next.Clusters[name] = s
		}
		return &next
	}
	r := history.NewRecorder("t", "l", 1)
	for i, next := range []func() *xdsconfig.Config{
		func() *xdsconfig.Config { return cfg },
		func() *xdsconfig.Config {
			return update("c00", func(s *xdsconfig.ClusterConfig) { s.EndpointsVersion = "2" })
		},
		func() *xdsconfig.Config {
			return update("c01", func(s *xdsconfig.ClusterConfig) { s.EndpointsVersion = "3" })
		},
		func() *xdsconfig.Config {
			return update("c03", func(s *xdsconfig.ClusterConfig) { s.Endpoints, s.EndpointsVersion = nil, "" })
		},
		func() *xdsconfig.Config {
			return update("c03", func(s *xdsconfig.ClusterConfig) {
				s.Endpoints, s.EndpointsVersion = &xdsresource.ClusterLoadAssignment{ClusterName: "c03"}, "5"
			})
		},
		func() *xdsconfig.Config {
			return update("c04", func(s *xdsconfig.ClusterConfig) { c := *s.Cluster; s.Cluster, s.Version = &c, "6" })
		},
		func() *xdsconfig.Config {
			return update("a", func(s *xdsconfig.ClusterConfig) {
				*s = *cfg.Clusters["c05"]
				s.Name = "a"
			})
		},
		func() *xdsconfig.Config { return update("a", nil) },
		func() *xdsconfig.Config {
			next := *cfg
			next.ListenerVersion, next.RouteConfigVersion = "9", "9"
			return &next
		},
	} {
		cfg = next()
		r.Config(cfg)
		got := r.Channel().Entries[0]
		fresh := history.NewRecorder("t", "l", 1)
		fresh.Config(cfg)
		want := fresh.Channel().Entries[0]
		if fmt.Sprint(got.Resources) != fmt.Sprint(want.Resources) || got.ResourcesOmitted != want.ResourcesOmitted {
			t.Errorf("update %d: resources %v + %d, want %v + %d", i, got.Resources, got.ResourcesOmitted, want.Resources, want.ResourcesOmitted)
		}
	}
	if e := r.Channel().Entries[0]; len(e.Resources) != history.MaxResources || e.ResourcesOmitted != 2+40+39-history.MaxResources {
		t.Errorf("%d resources + %d omitted; want %d listed of %d", len(e.Resources), e.ResourcesOmitted, history.MaxResources, 2+40+39)
	}
}
