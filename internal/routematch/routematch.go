package routematch

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/xdslens/xdslens/xdsclient/xdsresource/routeconfig"
)

// Metadata says which metadata of an RPC's context header matchers read.
type Metadata uint8

const (
	// Outgoing is a client's: the metadata the RPC sends
	// (metadata.ValueFromOutgoingContext).
	Outgoing Metadata = iota
	// Incoming is a server's: the metadata the RPC came with
	// (metadata.ValueFromIncomingContext).
	Incoming
)

// Rand returns a uniformly distributed number in [0, n). Tests inject a
// deterministic one; the default is math/rand/v2's.
type Rand func(n uint32) uint32

// DefaultRand is math/rand/v2's Uint32N.
func DefaultRand(n uint32) uint32 { return rand.Uint32N(n) }

// MaxRememberedMethods bounds how many methods a Table remembers the
// path-matching routes of; MaxRememberedRoutes how many such routes it
// remembers for one method. Beyond either, RPCs match every route's path.
const (
	MaxRememberedMethods = 1024
	MaxRememberedRoutes  = 64
)

// ScanAtMost is how many routes without a safe_regex path a table matches
// one by one without remembering methods: matching their paths costs less
// than looking a method up.
const ScanAtMost = 2

// Table is the compiled matchers of one virtual host's routes.
type Table struct {
	routes []Route
	rnd    Rand
	// memo says whether the table remembers the path matches of methods:
	// not when its paths cost less to match than a remembered method
	// costs to look up (ScanAtMost routes, no safe_regex).
	memo bool

	byMethod atomic.Pointer[map[string][]int32]
	mu       sync.Mutex // held to add to byMethod
}

// Option configures Compile.
type Option func(*Table)

// WithRand makes the table draw the random numbers of runtime fractions
// from r.
func WithRand(r Rand) Option { return func(t *Table) { t.rnd = r } }

// Compile compiles the matchers of routes, whose header matchers read md.
// It fails only on a regular expression that does not compile, which the
// resource validation already rejects, naming the route by its index.
func Compile(routes []routeconfig.Route, md Metadata, opts ...Option) (*Table, error) {
	t := &Table{rnd: DefaultRand, routes: make([]Route, len(routes))}
	for _, o := range opts {
		o(t)
	}
	t.memo = len(routes) > ScanAtMost
	for i := range routes {
		if err := t.routes[i].compile(&routes[i], md); err != nil {
			return nil, fmt.Errorf("routes[%d]: %w", i, err)
		}
		t.memo = t.memo || routes[i].PathMatch == routeconfig.PathRegex
	}
	return t, nil
}

// Len returns the number of routes.
func (t *Table) Len() int { return len(t.routes) }

// Route returns the matchers of route i.
func (t *Table) Route(i int) *Route { return &t.routes[i] }

// Match returns the index of the route that takes an RPC of method
// ("/pkg.Service/M") whose metadata ctx carries: the first route whose
// path, header and runtime-fraction matchers match, a fraction drawn only
// for a route whose path and headers match. It returns -1 when no route
// takes the RPC.
func (t *Table) Match(ctx context.Context, method string) int {
	if !t.memo {
		for i := range t.routes {
			if r := &t.routes[i]; r.path.Match(method) && (r.plain || t.try(ctx, i)) {
				return i
			}
		}
		return -1
	}
	if m := t.byMethod.Load(); m != nil {
		if candidates, ok := (*m)[method]; ok {
			for _, i := range candidates {
				if t.try(ctx, int(i)) {
					return int(i)
				}
			}
			return -1
		}
	}
	var candidates []int32
	remember := true
	matched := -1
	for i := range t.routes {
		if !t.routes[i].path.Match(method) {
			continue
		}
		if len(candidates) == MaxRememberedRoutes {
			remember = false
		}
		if remember {
			candidates = append(candidates, int32(i))
		}
		if matched < 0 && t.try(ctx, i) {
			matched = i
		}
		if matched >= 0 && !remember {
			break
		}
	}
	if remember {
		t.remember(method, candidates)
	}
	return matched
}

// try applies the header and fraction matchers of route i, whose path
// matches.
func (t *Table) try(ctx context.Context, i int) bool {
	r := &t.routes[i]
	if !r.headersMatch(ctx) {
		return false
	}
	return r.fraction < 0 || int64(t.rnd(1_000_000)) < r.fraction
}

// remember records the routes whose path matches method.
func (t *Table) remember(method string, candidates []int32) {
	t.mu.Lock()
	defer t.mu.Unlock()
	old := t.byMethod.Load()
	n := 0
	if old != nil {
		if _, ok := (*old)[method]; ok {
			return
		}
		n = len(*old)
	}
	if n >= MaxRememberedMethods {
		return
	}
	m := make(map[string][]int32, n+1)
	if old != nil {
		for k, v := range *old {
			m[k] = v
		}
	}
	m[strings.Clone(method)] = candidates
	t.byMethod.Store(&m)
}
