package xdsconfig

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/xdslens/xdslens/xdsclient/xdsresource"
)

// graph is a set of clusters for the walk: "eds" is a ready leaf, "dns" a
// ready LOGICAL_DNS leaf, "failed" a Cluster resource that failed,
// "pending" one not heard from, and "agg:a,b" an aggregate of a and b.
type graph map[string]string

func (g graph) lookup(looked *[]string) lookupFunc {
	return func(name string) (*xdsresource.Cluster, clusterStatus, *clusterState) {
		c, s := g.status(looked, name)
		return c, s, nil
	}
}

func (g graph) status(looked *[]string, name string) (*xdsresource.Cluster, clusterStatus) {
	{
		*looked = append(*looked, name)
		spec, ok := g[name]
		switch {
		case !ok || spec == "pending":
			return nil, statusPending
		case spec == "failed":
			return nil, statusFailed
		case spec == "eds":
			return &xdsresource.Cluster{Name: name, Kind: xdsresource.ClusterEDS}, statusReady
		case spec == "dns":
			return &xdsresource.Cluster{Name: name, Kind: xdsresource.ClusterLogicalDNS}, statusReady
		case strings.HasPrefix(spec, "agg:"):
			return &xdsresource.Cluster{Name: name, Kind: xdsresource.ClusterAggregate,
				PrioritizedClusters: strings.Split(strings.TrimPrefix(spec, "agg:"), ",")}, statusReady
		}
		panic("bad spec " + spec)
	}
}

// chain returns a graph of n clusters in a line: c0 → c1 → ... → c(n-1),
// the last an EDS leaf.
func chain(n int) graph {
	g := graph{}
	for i := range n - 1 {
		g[fmt.Sprintf("c%d", i)] = fmt.Sprintf("agg:c%d", i+1)
	}
	g[fmt.Sprintf("c%d", n-1)] = "eds"
	return g
}

func TestWalk(t *testing.T) {
	for _, tc := range []struct {
		name  string
		g     graph
		roots []string
		ready bool
		// want is, per cluster, its leaves joined with ",", or "error: "
		// and a part of its error.
		want map[string]string
		// absent clusters have no node (not reached, not watched).
		absent []string
	}{
		{
			name: "leaf", g: graph{"a": "eds"}, roots: []string{"a"}, ready: true,
			want: map[string]string{"a": "a"},
		},
		{
			name: "aggregate in priority order", g: graph{"agg": "agg:b,a,d", "a": "eds", "b": "dns", "d": "eds"},
			roots: []string{"agg"}, ready: true, want: map[string]string{"agg": "b,a,d"},
		},
		{
			name:  "chain of aggregates depth first",
			g:     graph{"top": "agg:mid,c3", "mid": "agg:c1,c2", "c1": "eds", "c2": "eds", "c3": "eds"},
			roots: []string{"top"}, ready: true,
			want: map[string]string{"top": "c1,c2,c3", "mid": "c1,c2"},
		},
		{
			name:  "diamond keeps a leaf once, every aggregate has its leaves",
			g:     graph{"a": "agg:b,c", "b": "agg:l,m", "c": "agg:l", "l": "eds", "m": "eds"},
			roots: []string{"a", "c"}, ready: true,
			want: map[string]string{"a": "l,m", "b": "l,m", "c": "l"},
		},
		{
			name: "leaf repeated in one aggregate", g: graph{"a": "agg:l,l,m,l", "l": "eds", "m": "eds"},
			roots: []string{"a"}, ready: true, want: map[string]string{"a": "l,m"},
		},
		{
			name: "self loop", g: graph{"a": "agg:a,l", "l": "eds"}, roots: []string{"a"}, ready: true,
			want: map[string]string{"a": `error: loop through "a"`},
		},
		{
			name:  "loop fails every aggregate above it",
			g:     graph{"r": "agg:x,l", "x": "agg:y", "y": "agg:x", "l": "eds"},
			roots: []string{"r", "l"}, ready: true,
			want: map[string]string{"r": "error: loop", "x": "error: loop", "y": "error: loop", "l": "l"},
		},
		{
			name: "loop reached from either end",
			g:    graph{"x": "agg:y", "y": "agg:x"}, roots: []string{"y", "x"}, ready: true,
			want: map[string]string{"x": "error: loop", "y": "error: loop"},
		},
		{
			name: "depth 16 is allowed", g: chain(16), roots: []string{"c0"}, ready: true,
			want: map[string]string{"c0": "c15", "c14": "c15"},
		},
		{
			name: "depth 17 is not", g: chain(17), roots: []string{"c0"}, ready: true,
			want:   map[string]string{"c0": "error: maximum depth", "c1": "error: maximum depth", "c15": "error: maximum depth"},
			absent: []string{"c16"}, // beyond the limit: not even watched
		},
		{
			name: "too deep from one root, fine from another",
			g:    chain(17), roots: []string{"c0", "c1"}, ready: true,
			want: map[string]string{"c0": "error: maximum depth", "c1": "c16", "c15": "c16", "c16": "c16"},
		},
		{
			name: "reached deep first, then higher up",
			g:    func() graph { g := chain(17); g["r"] = "agg:c0,c10"; return g }(), roots: []string{"r", "c10"}, ready: true,
			want: map[string]string{"r": "error: maximum depth", "c0": "error: maximum depth", "c10": "c16", "c12": "c16"},
		},
		{
			name: "failed child contributes nothing", g: graph{"a": "agg:f,l", "f": "failed", "l": "eds"},
			roots: []string{"a"}, ready: true, want: map[string]string{"a": "l"},
		},
		{
			name: "no leaves", g: graph{"a": "agg:f,b", "f": "failed", "b": "agg:g", "g": "failed"},
			roots: []string{"a"}, ready: true,
			want: map[string]string{"a": `error: graph for "a" has no leaf clusters`, "b": `error: graph for "b" has no leaf clusters`},
		},
		{
			name: "pending child: not ready, no error yet", g: graph{"a": "agg:p,f", "f": "failed"},
			roots: []string{"a"}, ready: false, want: map[string]string{"a": ""},
		},
		{
			name: "pending root", g: graph{}, roots: []string{"x"}, ready: false, want: map[string]string{"x": ""},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var w walk
			var looked []string
			w.reset(tc.g.lookup(&looked))
			ready := true
			for _, r := range tc.roots {
				if !w.root(r) {
					ready = false
				}
			}
			if ready != tc.ready {
				t.Errorf("ready = %v, want %v", ready, tc.ready)
			}
			for name, want := range tc.want {
				n := w.nodes[name]
				if n == nil {
					t.Errorf("%s: no node", name)
					continue
				}
				if strings.HasPrefix(want, "error: ") {
					if n.err == nil || !strings.Contains(n.err.Error(), strings.TrimPrefix(want, "error: ")) {
						t.Errorf("%s: error %v, want one saying %q", name, n.err, strings.TrimPrefix(want, "error: "))
					}
					continue
				}
				if n.err != nil {
					t.Errorf("%s: error %v, want leaves %q", name, n.err, want)
				} else if got := strings.Join(n.leaves, ","); got != want {
					t.Errorf("%s: leaves %q, want %q", name, got, want)
				}
			}
			for _, name := range tc.absent {
				if w.nodes[name] != nil || slices.Contains(looked, name) {
					t.Errorf("%s was reached", name)
				}
			}
		})
	}
}

// The walk of a wide graph of aggregates explores each cluster a bounded
// number of times, however many paths lead to it.
func TestWalkWideGraphIsLinear(t *testing.T) {
	g := graph{}
	const levels, width = 15, 8
	for l := range levels {
		var next []string
		for j := range width {
			next = append(next, fmt.Sprintf("n%d-%d", l+1, j))
		}
		for j := range width {
			g[fmt.Sprintf("n%d-%d", l, j)] = "agg:" + strings.Join(next, ",")
		}
	}
	for j := range width {
		g[fmt.Sprintf("n%d-%d", levels, j)] = "eds"
	}
	var w walk
	var looked []string
	w.reset(g.lookup(&looked))
	if !w.root("n0-0") {
		t.Fatal("not ready")
	}
	if n := w.nodes["n0-0"]; n.err != nil || len(n.leaves) != width {
		t.Errorf("root: leaves %v err %v, want %d leaves", n.leaves, n.err, width)
	}
	if max := (levels + 1) * width; len(looked) > max {
		t.Errorf("%d lookups for %d clusters", len(looked), max)
	}
}

// A walk reused for another graph forgets the previous one.
func TestWalkReset(t *testing.T) {
	var w walk
	var looked []string
	w.reset(graph{"a": "agg:b", "b": "eds"}.lookup(&looked))
	w.root("a")
	w.reset(graph{"c": "eds"}.lookup(&looked))
	w.root("c")
	if len(w.nodes) != 1 || w.nodes["c"] == nil || len(w.order) != 1 {
		t.Errorf("nodes after reset: %v", w.nodes)
	}
}
