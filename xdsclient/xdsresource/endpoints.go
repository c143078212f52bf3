package xdsresource

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"

	"github.com/xdslens/xdslens/xdsclient/xdsresource/internal/decoding"
)

// ClusterLoadAssignment is a validated ClusterLoadAssignment: the endpoints
// of an EDS cluster.
type ClusterLoadAssignment struct {
	// ClusterName is the resource name: the EDS service name of the
	// clusters that use it.
	ClusterName string
	// Localities are the localities with a non-zero weight, in order.
	// Their priorities run from 0 without gaps.
	Localities []Locality
	// Drops are the drop_overloads, in order.
	Drops []DropOverload
}

// Locality is a weighted group of endpoints at one priority.
type Locality struct {
	Region, Zone, SubZone string
	// Weight is load_balancing_weight, always positive. The weights of the
	// localities at one priority add up to at most 2^32-1.
	Weight uint32
	// Priority is 0 for the highest priority.
	Priority uint32
	// Endpoints are the locality's endpoints, in order, less those that
	// gRPC leaves out: the UNHEALTHY, TIMEOUT and DEGRADED ones.
	Endpoints []Endpoint
}

// Endpoint is one backend.
type Endpoint struct {
	// Addresses are "ip:port" strings: the endpoint's address first, then
	// its additional_addresses. No address appears twice in a
	// ClusterLoadAssignment.
	Addresses []string
	// Health is the health status reported by the control plane:
	// HealthUnknown, HealthHealthy or HealthDraining (endpoints of the
	// other statuses are left out).
	Health HealthStatus
	// Weight is load_balancing_weight, 1 when unset, always positive.
	Weight uint32
	// Hostname is the endpoint's hostname, possibly empty.
	Hostname string
	// HashKey is the endpoint's key on a ring_hash ring (gRFC A76): the
	// string "hash_key" of its metadata's filter_metadata "envoy.lb",
	// empty when there is none (the ring then keys the endpoint by its
	// address).
	HashKey string
}

// HealthStatus is an endpoint's health as the control plane reports it;
// the values are those of envoy.config.core.v3.HealthStatus.
type HealthStatus int32

// Health statuses.
const (
	HealthUnknown   = HealthStatus(corev3.HealthStatus_UNKNOWN)
	HealthHealthy   = HealthStatus(corev3.HealthStatus_HEALTHY)
	HealthUnhealthy = HealthStatus(corev3.HealthStatus_UNHEALTHY)
	HealthDraining  = HealthStatus(corev3.HealthStatus_DRAINING)
	HealthTimeout   = HealthStatus(corev3.HealthStatus_TIMEOUT)
	HealthDegraded  = HealthStatus(corev3.HealthStatus_DEGRADED)
)

// String returns the proto enum name, such as "HEALTHY".
func (h HealthStatus) String() string { return corev3.HealthStatus(h).String() }

// Usable reports whether gRPC sends traffic to an endpoint with this
// status: HEALTHY or UNKNOWN.
func (h HealthStatus) Usable() bool { return h == HealthHealthy || h == HealthUnknown }

// DropOverload is one category of requests to drop.
type DropOverload struct {
	// Category names the drops in load reports; never empty.
	Category string
	// Numerator is the share to drop out of Denominator, which is always
	// one million: HUNDRED and TEN_THOUSAND denominators are converted.
	Numerator, Denominator uint32
}

// Summary returns a one-line description of c, for example
// `endpoints c1: 2 localities, 5 endpoints (4 healthy), 1 drop`. Healthy
// counts the endpoints whose status is Usable.
func (c *ClusterLoadAssignment) Summary() string {
	var eps, healthy int
	for _, l := range c.Localities {
		eps += len(l.Endpoints)
		for _, e := range l.Endpoints {
			if e.Health.Usable() {
				healthy++
			}
		}
	}
	return fmt.Sprintf("endpoints %s: %s, %s (%d healthy), %s", c.ClusterName,
		decoding.Plural(len(c.Localities), "locality", "localities"),
		decoding.Plural(eps, "endpoint", "endpoints"), healthy,
		decoding.Plural(len(c.Drops), "drop", "drops"))
}

func decodeEndpoints(_ DecodeOptions, b []byte) (string, any, error) {
	m := new(endpointv3.ClusterLoadAssignment)
	if err := decoding.Unmarshal(b, m); err != nil {
		return "", nil, err
	}
	if m.GetClusterName() == "" {
		return "", nil, errNoName
	}
	c, err := validateEndpoints(m)
	if err != nil {
		return m.GetClusterName(), nil, err
	}
	return m.GetClusterName(), c, nil
}

type localityKey struct {
	region, zone, subZone string
	priority              uint32
}

func validateEndpoints(m *endpointv3.ClusterLoadAssignment) (*ClusterLoadAssignment, error) {
	c := &ClusterLoadAssignment{ClusterName: m.GetClusterName()}
	for i, d := range m.GetPolicy().GetDropOverloads() {
		if d.GetCategory() == "" {
			return nil, fmt.Errorf("policy.drop_overloads[%d].category: empty", i)
		}
		if d.GetDropPercentage() == nil {
			// As in gRPC C-core: a drop without a percentage says nothing
			// of how much to drop.
			return nil, fmt.Errorf("policy.drop_overloads[%d].drop_percentage: not set (category %q)", i, d.GetCategory())
		}
		n, err := decoding.PerMillion(d.GetDropPercentage())
		if err != nil {
			return nil, fmt.Errorf("policy.drop_overloads[%d]: %v", i, err)
		}
		c.Drops = append(c.Drops, DropOverload{Category: d.GetCategory(), Numerator: n, Denominator: 1_000_000})
	}

	seenLocality := make(map[localityKey]bool)
	seenAddr := make(map[string]bool)
	weightSums := make(map[uint32]uint64) // by priority
	for i, le := range m.GetEndpoints() {
		at := fmt.Sprintf("endpoints[%d]", i)
		w := le.GetLoadBalancingWeight().GetValue()
		if w == 0 {
			// As in gRPC C-core, a locality without a weight is left out
			// before anything else of it is read, its locality included.
			continue
		}
		id := le.GetLocality()
		if id == nil {
			return nil, fmt.Errorf("%s: locality is not set", at)
		}
		l := Locality{Region: id.GetRegion(), Zone: id.GetZone(), SubZone: id.GetSubZone(), Weight: w, Priority: le.GetPriority()}
		key := localityKey{l.Region, l.Zone, l.SubZone, l.Priority}
		if seenLocality[key] {
			return nil, fmt.Errorf("%s: duplicate locality {region %q, zone %q, sub_zone %q} at priority %d",
				at, l.Region, l.Zone, l.SubZone, l.Priority)
		}
		seenLocality[key] = true
		sum := weightSums[l.Priority]
		if !decoding.AddWeight(&sum, w) {
			return nil, fmt.Errorf("%s: locality weights at priority %d add up to more than 4294967295", at, l.Priority)
		}
		weightSums[l.Priority] = sum

		for j, lbe := range le.GetLbEndpoints() {
			if !kept(lbe.GetHealthStatus()) {
				continue
			}
			e, err := validateEndpoint(lbe, seenAddr)
			if err != nil {
				return nil, fmt.Errorf("%s.lb_endpoints[%d]: %v", at, j, err)
			}
			l.Endpoints = append(l.Endpoints, e)
		}
		c.Localities = append(c.Localities, l)
	}
	for p := range uint32(len(weightSums)) {
		if _, ok := weightSums[p]; !ok {
			return nil, fmt.Errorf("priorities are not contiguous: priority %d is missing", p)
		}
	}
	return c, nil
}

// kept reports whether an endpoint of health status h is read at all. As in
// gRPC C-core, an endpoint that is neither UNKNOWN, HEALTHY nor DRAINING
// (UNHEALTHY, TIMEOUT, DEGRADED, or a value unknown to the API) is left out
// before anything else of it is looked at: its weight, its address, whether
// its address repeats another's. A DRAINING endpoint is read and checked,
// and kept with its status, though no RPC is sent to it.
func kept(h corev3.HealthStatus) bool {
	switch h {
	case corev3.HealthStatus_UNKNOWN, corev3.HealthStatus_HEALTHY, corev3.HealthStatus_DRAINING:
		return true
	}
	return false
}

func validateEndpoint(m *endpointv3.LbEndpoint, seenAddr map[string]bool) (Endpoint, error) {
	e := Endpoint{Health: HealthStatus(m.GetHealthStatus()), Weight: 1}
	if w := m.GetLoadBalancingWeight(); w != nil {
		if w.GetValue() == 0 {
			return e, errors.New("load_balancing_weight is 0, must be at least 1")
		}
		e.Weight = w.GetValue()
	}
	ep := m.GetEndpoint()
	if ep == nil {
		return e, errors.New("endpoint is not set")
	}
	e.Hostname = ep.GetHostname()
	if v, ok := m.GetMetadata().GetFilterMetadata()["envoy.lb"].GetFields()["hash_key"]; ok {
		e.HashKey = v.GetStringValue()
	}
	addrs := []*corev3.Address{ep.GetAddress()}
	for _, a := range ep.GetAdditionalAddresses() {
		addrs = append(addrs, a.GetAddress())
	}
	for k, a := range addrs {
		s, err := socketAddress(a)
		if err == nil && seenAddr[s] {
			err = fmt.Errorf("duplicate address %q", s)
		}
		if err != nil {
			if k == 0 {
				return e, fmt.Errorf("endpoint.address: %v", err)
			}
			return e, fmt.Errorf("endpoint.additional_addresses[%d]: %v", k-1, err)
		}
		seenAddr[s] = true
		e.Addresses = append(e.Addresses, s)
	}
	return e, nil
}

// socketAddress returns a as "ip:port". The address must be an IP literal.
// The port is port_value, at most 65535; as in gRPC C-core and grpc-go, an
// address with a named_port or no port at all has port 0, which no
// connection reaches, rather than being an error.
func socketAddress(a *corev3.Address) (string, error) {
	sa := a.GetSocketAddress()
	if sa == nil {
		return "", errors.New("no socket_address")
	}
	ip, err := netip.ParseAddr(sa.GetAddress())
	if err != nil {
		return "", fmt.Errorf("address %q is not an IP address", sa.GetAddress())
	}
	p := sa.GetPortValue() // 0 when named_port is set instead
	if p > 65535 {
		return "", fmt.Errorf("port_value %d is out of range", p)
	}
	return net.JoinHostPort(ip.String(), strconv.Itoa(int(p))), nil
}
