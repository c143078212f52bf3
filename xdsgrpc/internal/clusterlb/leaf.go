package clusterlb

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync"

	"google.golang.org/grpc/attributes"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/experimental/balancer/weight"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/resolver/ringhash"
	"google.golang.org/grpc/status"

	"github.com/xdslens/xdslens/internal/certstore"
	"github.com/xdslens/xdslens/internal/handshake"
	"github.com/xdslens/xdslens/xdsclient/lrs"
	"github.com/xdslens/xdslens/xdsclient/xdsconfig"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
)

// million is the denominator of drop_overloads.
const million = 1_000_000

// leaf is one leaf cluster as one Config has it, with what its picks
// need. It is immutable once built, for pickers read it concurrently; a
// new Config builds new leaves.
type leaf struct {
	cluster string // the route-level cluster, Config.Name
	name    string
	service string // the EDS service name, as the Cluster has it
	label   string // how messages name the leaf
	note    string // the resolution note, prefixed with "; " when set
	dns     bool   // a LOGICAL_DNS cluster: children may ask to resolve again
	max     uint32
	drops   []drop
	cbErr   error
	counter *counter
	load    *lrs.ClusterLoad // nil without load reports
	hooks   *Hooks
	rand    func(uint32) uint32
	// policy is the endpoint policy the Cluster names; nil when it cannot
	// be built (policyErr says why), and the leaf fails.
	policy    *endpointPolicy
	policyErr error
	// certs is Config.Certificates: nil when the channel does not apply
	// clusters' TLS settings.
	certs *certstore.Store
	// tls are the Cluster's TLS settings, compiled once for the
	// handshakes with all its endpoints; nil for a plaintext cluster, or
	// when the channel does not apply them, or when they do not compile
	// (tlsErr says why, and the leaf fails).
	tls    *handshake.Settings
	tlsErr error

	counters    *Counters
	releaseLoad func() // nil without load reports

	// dones are the Dones of attempts whose status the interceptors
	// settle (attemptdone.go), made once and reused.
	dones sync.Pool
}

// drop is one drop_overloads category, with the error of its drops.
type drop struct {
	category   string
	perMillion uint32
	err        error
}

var noHooks = &Hooks{}

// newLeaf builds the leaf of slot cc of cfg, acquiring its counter and
// starting its load reports; release gives them back.
func newLeaf(cfg *Config, counters *Counters, cc *xdsconfig.ClusterConfig) *leaf {
	l := &leaf{cluster: cfg.Name, name: cc.Name, hooks: cfg.Hooks, rand: cfg.Rand, counters: counters, certs: cfg.Certificates}
	if l.hooks == nil {
		l.hooks = noHooks
	}
	if l.rand == nil {
		l.rand = rand.Uint32N
	}
	l.label = fmt.Sprintf("cluster %q", cc.Name)
	if cfg.Name != cc.Name {
		l.label = fmt.Sprintf("cluster %q (of aggregate cluster %q)", cc.Name, cfg.Name)
	}
	if cc.ResolutionNote != "" {
		l.note = "; " + cc.ResolutionNote
	}
	if cc.Err != nil {
		return l
	}
	c := cc.Cluster
	l.service, l.max, l.dns = c.EDSServiceName, c.MaxRequests, c.Kind == xdsresource.ClusterLogicalDNS
	l.policy, l.policyErr = policyOf(c)
	if c.Security != nil && l.certs != nil {
		l.tls, l.tlsErr = handshake.NewSettings(c.Security)
	}
	l.counter = counters.acquire(c.Name, c.EDSServiceName, c.MaxRequests)
	l.cbErr = status.Errorf(codes.Unavailable, "%s: circuit breaking: max_requests %d reached", l.label, c.MaxRequests)
	if cc.Endpoints != nil {
		for _, d := range cc.Endpoints.Drops {
			pm := uint32(min(uint64(d.Numerator)*million/uint64(max(d.Denominator, 1)), million))
			l.drops = append(l.drops, drop{category: d.Category, perMillion: pm,
				err: status.Errorf(codes.Unavailable, "%s: dropped by drop_overloads category %q", l.label, d.Category)})
		}
	}
	if c.LRSServer && cfg.LoadReporter != nil {
		load, release, err := cfg.LoadReporter.ReportLoad(cc.Server, c.Name, c.EDSServiceName)
		switch {
		case err != nil:
			if h := l.hooks.LoadReportFailed; h != nil {
				h(LoadReportErrorInfo{Cluster: l.cluster, Leaf: l.name, Server: cc.Server, Err: err})
			}
		case load != nil:
			l.load, l.releaseLoad = load, release
		case release != nil:
			release()
		}
	}
	return l
}

// policyName is the name of the leaf's endpoint policy, "" when it has
// none.
func (l *leaf) policyName() string {
	if l.policy == nil {
		return ""
	}
	return l.policy.name
}

// release gives back the leaf's counter and stops its load reports.
func (l *leaf) release() {
	if l.counter != nil {
		l.counters.release(l.counter)
	}
	if l.releaseLoad != nil {
		l.releaseLoad()
	}
}

// localityAttr is what an endpoint's attributes say of its locality.
type localityAttr struct {
	id     lrs.Locality
	weight uint32
}

type localityKey struct{}

// localityOf returns the locality of an endpoint built by priorities.
func localityOf(ep resolver.Endpoint) *localityAttr {
	a, _ := ep.Attributes.Value(localityKey{}).(*localityAttr)
	return a
}

// localityOfAddr returns the locality of an address of an endpoint built
// by priorities.
func localityOfAddr(a resolver.Address) *localityAttr {
	la, _ := a.BalancerAttributes.Value(localityKey{}).(*localityAttr)
	return la
}

// prioritySpec is one priority of one leaf as a Config gives it.
type prioritySpec struct {
	key        string
	leaf       *leaf
	localities []lrs.Locality
	endpoints  []resolver.Endpoint // the usable ones
	// err is set when endpoints is empty: why the priority has none.
	err error
}

// priorities returns the priorities of the leaf in slot cc, highest first,
// named by n. A leaf has at least one: one without endpoints (its Cluster
// failed, its endpoints could not be had, or there are none) has a single
// priority without endpoints that fails with the reason, as in C-core, so
// that its drops still apply and its failure carries its resolution note.
func (l *leaf) priorities(cc *xdsconfig.ClusterConfig, n *namer) []prioritySpec {
	var fail error
	switch {
	case cc.Err != nil:
		fail = fmt.Errorf("%s: %s%s", l.label, status.Convert(cc.Err).Message(), l.note)
	case l.policyErr != nil:
		fail = status.Errorf(codes.Unavailable, "%s: %v%s", l.label, l.policyErr, l.note)
	case cc.Cluster.Security != nil && l.certs == nil:
		// Fail closed: a cluster that asks for TLS is never reached in
		// plaintext. The status fails wait-for-ready RPCs too, for waiting
		// cannot change it.
		fail = status.Errorf(codes.Unavailable, "%s: its transport_socket asks for TLS (an UpstreamTlsContext, gRFC A29), which this channel's transport credentials do not apply (dial with xdscreds.NewClientCredentials); RPCs to it are not sent in plaintext%s", l.label, l.note)
	case l.tlsErr != nil:
		fail = status.Errorf(codes.Unavailable, "%s: its UpstreamTlsContext cannot be applied: %v; RPCs to it are not sent in plaintext%s", l.label, l.tlsErr, l.note)
	case cc.Endpoints == nil:
		fail = fmt.Errorf("%s: endpoints not available%s", l.label, l.note)
	case len(cc.Endpoints.Localities) == 0:
		fail = fmt.Errorf("%s: no endpoints%s", l.label, l.note)
	}
	if fail != nil {
		n.reset()
		return []prioritySpec{{key: l.name + "/none", leaf: l, err: fail}}
	}
	var specs []prioritySpec
	var total []int
	for _, loc := range cc.Endpoints.Localities {
		for int(loc.Priority) >= len(specs) {
			specs = append(specs, prioritySpec{leaf: l})
			total = append(total, 0)
		}
		s := &specs[loc.Priority]
		id := lrs.Locality{Region: loc.Region, Zone: loc.Zone, SubZone: loc.SubZone}
		s.localities = append(s.localities, id)
		la := &localityAttr{id: id, weight: loc.Weight}
		attr := attributes.New(localityKey{}, la)
		for _, e := range loc.Endpoints {
			total[loc.Priority]++
			if !e.Health.Usable() {
				continue
			}
			ep := resolver.Endpoint{Addresses: make([]resolver.Address, len(e.Addresses)), Attributes: attr}
			var info *handshake.Info
			if l.tls != nil {
				host := e.Hostname
				if cc.Cluster.Kind == xdsresource.ClusterLogicalDNS {
					host = cc.Cluster.DNSHostname
				}
				info = &handshake.Info{Cluster: l.name, Settings: l.tls, Store: l.certs, Hostname: host}
			}
			for i, a := range e.Addresses {
				ep.Addresses[i] = resolver.Address{Addr: a, BalancerAttributes: attr}
				if info != nil {
					ep.Addresses[i] = handshake.Set(ep.Addresses[i], info)
				}
			}
			// The weight ring_hash and weighted policies read: the
			// locality's weight times the endpoint's, as gRPC's xDS
			// channels set it.
			ep = weight.Set(ep, weight.EndpointInfo{Weight: uint32(min(uint64(loc.Weight)*uint64(max(e.Weight, 1)), math.MaxUint32))})
			ep = ringhash.SetHashKey(ep, e.HashKey) // gRFC A76; none when empty
			s.endpoints = append(s.endpoints, ep)
		}
	}
	locs := make([][]lrs.Locality, len(specs))
	for p := range specs {
		locs[p] = specs[p].localities
		if len(specs[p].endpoints) == 0 {
			specs[p].err = fmt.Errorf("%s: priority %d: none of its %d endpoints is HEALTHY or UNKNOWN%s", l.label, p, total[p], l.note)
		}
	}
	for p, key := range n.names(l.name, locs) {
		specs[p].key = key
	}
	return specs
}

// namer names the priorities of one leaf so that a priority keeps its name,
// and its connections, across updates while it keeps one of its
// localities, even when priorities are added, removed or renumbered, as
// C-core's cds policy and grpc-go's cluster resolver do.
type namer struct {
	byLocality map[lrs.Locality]string
	next       int
}

func (n *namer) reset() { n.byLocality = nil }

// names returns the name of each priority, given the localities of each.
func (n *namer) names(leaf string, priorities [][]lrs.Locality) []string {
	names := make([]string, len(priorities))
	taken := make(map[string]bool, len(priorities))
	for p, locs := range priorities {
		for _, id := range locs {
			if old, ok := n.byLocality[id]; ok && !taken[old] {
				names[p], taken[old] = old, true
				break
			}
		}
	}
	n.byLocality = make(map[lrs.Locality]string)
	for p, locs := range priorities {
		if names[p] == "" {
			names[p] = fmt.Sprintf("%s/%d", leaf, n.next)
			n.next++
		}
		for _, id := range locs {
			n.byLocality[id] = names[p]
		}
	}
	return names
}
