package xdsconfig

import (
	"fmt"

	"github.com/xdslens/xdslens/xdsclient/xdsresource"
)

// MaxAggregateDepth is how many levels an aggregate cluster graph may have,
// counting the root and the leaves (gRFC A37; gRPC C-core's limit): a root
// aggregate over 14 more levels of aggregates over leaves is the deepest
// graph allowed.
const MaxAggregateDepth = 16

// clusterStatus is what the walk needs to know about one cluster.
type clusterStatus int

const (
	// statusPending: the Cluster resource has not been heard from yet, or
	// an EDS or LOGICAL_DNS cluster's endpoints have not.
	statusPending clusterStatus = iota
	// statusFailed: the Cluster resource failed; the cluster is its own
	// error and contributes no leaf.
	statusFailed
	// statusReady: the cluster and, for a leaf, its endpoints are known.
	statusReady
)

// lookupFunc tells the walk about cluster name: its resource when one is
// usable (nil otherwise), its status, and the manager's state of it, kept
// in the node for the manager. The manager's lookup starts the watches a
// cluster needs as a side effect.
type lookupFunc func(name string) (*xdsresource.Cluster, clusterStatus, *clusterState)

// node is the walk's result for one cluster.
type node struct {
	name    string
	cluster *xdsresource.Cluster
	status  clusterStatus
	state   *clusterState
	// ready: the cluster and everything below it has been heard from.
	ready bool
	// leaves are, for an aggregate, its leaf clusters in priority order,
	// each once; for a usable leaf, the cluster itself.
	leaves []string
	// err is the graph error of an aggregate: a loop, the depth limit, or
	// no leaf clusters at all. Loop and depth errors pass to the
	// aggregates above; a child with no leaves only contributes none.
	err      error
	graphErr bool // err is a loop or depth error
	// budget is how many levels, this one included, the walk allowed when
	// it explored the node; a depth error found with a small budget may go
	// away when the node is reached higher up.
	budget  int
	onStack bool
	self    [1]string // the leaves of a leaf, without an allocation
}

// errDepth is the error of an aggregate whose graph is too deep; the
// walk recognises it by identity.
var errDepth = fmt.Errorf("aggregate cluster graph exceeds the maximum depth of %d", MaxAggregateDepth)

// walk expands clusters from roots depth first: each aggregate into its
// leaf clusters (gRFC A37), each cluster once. It is reused between
// updates to keep its allocations.
type walk struct {
	lookup lookupFunc
	nodes  map[string]*node
	order  []*node // every node explored, in the order first reached
	free   []*node
}

// reset forgets the previous walk, keeping its memory.
func (w *walk) reset(lookup lookupFunc) {
	w.lookup = lookup
	for _, n := range w.order {
		*n = node{}
		w.free = append(w.free, n)
	}
	clear(w.nodes)
	if w.nodes == nil {
		w.nodes = make(map[string]*node)
	}
	w.order = w.order[:0]
}

// root walks from a cluster a route names and reports whether everything
// under it has been heard from.
func (w *walk) root(name string) bool {
	return w.visit(name, MaxAggregateDepth).ready
}

// visit returns the node of name explored with at least budget levels
// allowed, exploring it if needed. A budget of zero is the depth limit:
// the cluster is neither watched nor given a slot (as in gRPC C-core),
// and the aggregates above it fail.
func (w *walk) visit(name string, budget int) *node {
	n := w.nodes[name]
	switch {
	case budget <= 0:
		return &node{name: name, ready: true, err: errDepth, graphErr: true}
	case n == nil:
		n = w.newNode(name)
	case n.onStack:
		return &node{name: name, ready: true, err: fmt.Errorf("aggregate cluster graph has a loop through %q", name), graphErr: true}
	case n.err != errDepth || budget <= n.budget:
		return n
	}
	n.budget = budget
	n.cluster, n.status, n.state = w.lookup(name)
	n.leaves, n.err, n.graphErr = nil, nil, false
	switch {
	case n.status == statusPending:
		n.ready = false
	case n.status == statusFailed:
		n.ready = true
	case n.cluster.Kind != xdsresource.ClusterAggregate:
		n.ready = true
		n.self[0] = name
		n.leaves = n.self[:]
	default:
		w.expand(n, budget)
	}
	return n
}

func (w *walk) newNode(name string) *node {
	var n *node
	if k := len(w.free); k > 0 {
		n, w.free = w.free[k-1], w.free[:k-1]
	} else {
		n = new(node)
	}
	n.name = name
	w.nodes[name] = n
	w.order = append(w.order, n)
	return n
}

// expand walks the children of aggregate n in priority order and gathers
// their leaves.
func (w *walk) expand(n *node, budget int) {
	n.onStack = true
	defer func() { n.onStack = false }()
	n.ready = true
	var seen map[string]bool // for long leaf lists only
	for _, child := range n.cluster.PrioritizedClusters {
		c := w.visit(child, budget-1)
		n.ready = n.ready && c.ready
		if c.graphErr {
			if n.err == nil || c.err == errDepth {
				n.err, n.graphErr = c.err, true
			}
			if c.err == errDepth {
				// As gRPC C-core: the graph is invalid, the rest of the
				// children need not be watched.
				break
			}
			continue
		}
		for _, leaf := range c.leaves {
			if seen == nil && len(n.leaves) >= 16 {
				seen = make(map[string]bool, 2*len(n.leaves))
				for _, l := range n.leaves {
					seen[l] = true
				}
			}
			if seen != nil {
				if seen[leaf] {
					continue
				}
				seen[leaf] = true
			} else if contains(n.leaves, leaf) {
				continue
			}
			n.leaves = append(n.leaves, leaf)
		}
	}
	if n.graphErr {
		// The slot is an error whatever the children not yet heard from
		// say, as in gRPC C-core.
		n.leaves, n.ready = nil, true
		return
	}
	if n.ready && len(n.leaves) == 0 {
		n.err = fmt.Errorf("aggregate cluster graph for %q has no leaf clusters", n.name)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
