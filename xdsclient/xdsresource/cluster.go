package xdsresource

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/xdslens/xdslens/internal/xdsduration"
	"github.com/xdslens/xdslens/xdsclient/xdsresource/internal/decoding"
	"github.com/xdslens/xdslens/xdsclient/xdsresource/lbpolicy"
	"github.com/xdslens/xdslens/xdsclient/xdsresource/security"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	aggregatev3 "github.com/envoyproxy/go-control-plane/envoy/extensions/clusters/aggregate/v3"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/xdslens/xdslens/xdsclient/internal/xdstp"
)

// ClusterKind is the kind of a Cluster.
type ClusterKind int

// Cluster kinds.
const (
	// ClusterEDS gets its endpoints from EDS.
	ClusterEDS ClusterKind = iota + 1
	// ClusterLogicalDNS resolves one DNS name.
	ClusterLogicalDNS
	// ClusterAggregate is a prioritized list of other clusters.
	ClusterAggregate
)

// String returns "EDS", "LOGICAL_DNS" or "AGGREGATE".
func (k ClusterKind) String() string {
	switch k {
	case ClusterEDS:
		return "EDS"
	case ClusterLogicalDNS:
		return "LOGICAL_DNS"
	case ClusterAggregate:
		return "AGGREGATE"
	}
	return fmt.Sprintf("ClusterKind(%d)", int(k))
}

// DefaultMaxRequests is the max_requests gRPC applies when a Cluster's
// circuit breakers set none.
const DefaultMaxRequests = 1024

// Cluster is a validated Cluster.
type Cluster struct {
	// Name is the Cluster's name.
	Name string
	// Kind is EDS, LOGICAL_DNS or AGGREGATE; other kinds are invalid.
	Kind ClusterKind
	// EDSServiceName is eds_cluster_config.service_name of an EDS cluster;
	// when empty, Name is the EDS resource name (see EDSName). It is never
	// empty for a cluster with an xdstp:// name.
	EDSServiceName string
	// DNSHostname is the "host:port" that a LOGICAL_DNS cluster resolves.
	DNSHostname string
	// PrioritizedClusters are the clusters of an AGGREGATE cluster, highest
	// priority first; never empty.
	PrioritizedClusters []string

	// Config is the load balancing policy, from load_balancing_policy
	// (the first supported entry) when that is set, else from lb_policy.
	lbpolicy.Config
	// LoadBalancingPolicy is load_balancing_policy as received, nil when
	// unset, for the policy parameters not copied above.
	LoadBalancingPolicy *clusterv3.LoadBalancingPolicy

	// MaxRequests is max_requests of the DEFAULT priority circuit-breaker
	// threshold, DefaultMaxRequests when unset.
	MaxRequests uint32
	// OutlierDetection is outlier_detection as received, nil when unset.
	// Its durations are valid and non-negative and its percentages are at
	// most 100.
	OutlierDetection *clusterv3.OutlierDetection
	// LRSServer is true when load reports go to the server that sent the
	// Cluster (lrs_server is self).
	LRSServer bool
	// ConnectTimeout is connect_timeout, zero when unset.
	ConnectTimeout time.Duration
	// Security is the validated UpstreamTlsContext of transport_socket
	// (gRFC A29), nil when the cluster is plaintext.
	Security *security.Config
}

// EDSName returns the name of the ClusterLoadAssignment that an EDS
// cluster uses: EDSServiceName, or Name when that is empty.
func (c *Cluster) EDSName() string {
	if c.EDSServiceName != "" {
		return c.EDSServiceName
	}
	return c.Name
}

// Summary returns a one-line description of c, for example
// `cluster c1: EDS service "c1-eds", round_robin, max_requests 1024`.
func (c *Cluster) Summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "cluster %s: ", c.Name)
	switch c.Kind {
	case ClusterEDS:
		fmt.Fprintf(&b, "EDS service %q", c.EDSName())
	case ClusterLogicalDNS:
		fmt.Fprintf(&b, "LOGICAL_DNS %q", c.DNSHostname)
	case ClusterAggregate:
		fmt.Fprintf(&b, "AGGREGATE of %q", c.PrioritizedClusters)
	default:
		b.WriteString(c.Kind.String())
	}
	b.WriteString(", " + c.LBPolicy)
	if c.LBChildPolicy != "" {
		fmt.Fprintf(&b, "(%s)", c.LBChildPolicy)
	}
	fmt.Fprintf(&b, ", max_requests %d", c.MaxRequests)
	if c.OutlierDetection != nil {
		b.WriteString(", outlier_detection")
	}
	if c.LRSServer {
		b.WriteString(", LRS")
	}
	return b.String()
}

// clusterPool holds the scratch space that decodeCluster builds Cluster
// messages in: reusing it saves the message's ~550 bytes and, for the
// common shape of an EDS cluster, its sub-messages, for every cluster of
// every full-state update.
var clusterPool = sync.Pool{New: func() any { return new(clusterScratch) }}

func decodeCluster(opts DecodeOptions, b []byte) (string, any, error) {
	s := clusterPool.Get().(*clusterScratch)
	defer func() {
		s.reset() // drops the pointers to sub-messages before it is pooled
		clusterPool.Put(s)
	}()
	if err := s.decode(b); err != nil {
		return "", nil, err
	}
	return checkCluster(opts, &s.m)
}

// checkCluster validates m, decoded from a resource.
func checkCluster(opts DecodeOptions, m *clusterv3.Cluster) (string, any, error) {
	if m.GetName() == "" {
		return "", nil, errNoName
	}
	c, err := validateCluster(opts, m)
	if err != nil {
		return m.GetName(), nil, err
	}
	return m.GetName(), c, nil
}

func validateCluster(opts DecodeOptions, m *clusterv3.Cluster) (*Cluster, error) {
	c := &Cluster{
		Name:             m.GetName(),
		MaxRequests:      DefaultMaxRequests,
		ConnectTimeout:   m.GetConnectTimeout().AsDuration(),
		OutlierDetection: m.GetOutlierDetection(),
	}
	if err := clusterKind(m, c); err != nil {
		return nil, err
	}
	lb, err := lbpolicy.FromCluster(m)
	if err != nil {
		return nil, err
	}
	c.Config, c.LoadBalancingPolicy = lb, m.GetLoadBalancingPolicy()
	for _, t := range m.GetCircuitBreakers().GetThresholds() {
		if t.GetPriority() == corev3.RoutingPriority_DEFAULT {
			if mr := t.GetMaxRequests(); mr != nil {
				c.MaxRequests = mr.GetValue()
			}
			break
		}
	}
	if err := checkOutlierDetection(m.GetOutlierDetection()); err != nil {
		return nil, fmt.Errorf("outlier_detection.%v", err)
	}
	if lrs := m.GetLrsServer(); lrs != nil {
		if lrs.GetSelf() == nil {
			return nil, errors.New("lrs_server must be self")
		}
		c.LRSServer = true
	}
	if err := checkUpstreamConfig(m.GetUpstreamConfig()); err != nil {
		return nil, err
	}
	if err := checkClusterMetadata(m.GetMetadata()); err != nil {
		return nil, err
	}
	if len(m.GetTransportSocketMatches()) != 0 {
		return nil, errors.New("transport_socket_matches is not supported")
	}
	sc, err := security.Upstream(m.GetTransportSocket(), opts.HasCertificateProvider)
	if err != nil {
		return nil, fmt.Errorf("transport_socket.%v", err)
	}
	c.Security = sc
	return c, nil
}

// aggregateConfigType is the type of the typed_config of an aggregate
// cluster's cluster_type, the only custom cluster type gRPC knows.
const aggregateConfigType = "envoy.extensions.clusters.aggregate.v3.ClusterConfig"

func clusterKind(m *clusterv3.Cluster, c *Cluster) error {
	if ct := m.GetClusterType(); ct != nil {
		// As in gRPC C-core, the extension is known by the type of its
		// typed_config (with or without the type.googleapis.com/ prefix);
		// its name is not read.
		cfg := ct.GetTypedConfig()
		if cfg == nil {
			return fmt.Errorf("cluster_type %q: typed_config: not set", ct.GetName())
		}
		if t := strings.TrimPrefix(cfg.GetTypeUrl(), "type.googleapis.com/"); t != aggregateConfigType {
			return fmt.Errorf("cluster_type %q: typed_config: unsupported custom cluster type %q", ct.GetName(), cfg.GetTypeUrl())
		}
		agg := new(aggregatev3.ClusterConfig)
		if err := decoding.Unmarshal(cfg.GetValue(), agg); err != nil {
			return fmt.Errorf("cluster_type %q: typed_config: %v", ct.GetName(), err)
		}
		if len(agg.GetClusters()) == 0 {
			return errors.New("aggregate cluster has no clusters")
		}
		c.Kind, c.PrioritizedClusters = ClusterAggregate, agg.GetClusters()
		return nil
	}
	switch m.GetType() {
	case clusterv3.Cluster_EDS:
		eds := m.GetEdsClusterConfig()
		if src := eds.GetEdsConfig(); src.GetAds() == nil && src.GetSelf() == nil {
			return errors.New("eds_cluster_config.eds_config must be ads or self")
		}
		if eds.GetServiceName() == "" && xdstp.Is(m.GetName()) {
			return errors.New("EDS cluster with xdstp:// name needs eds_cluster_config.service_name")
		}
		c.Kind, c.EDSServiceName = ClusterEDS, eds.GetServiceName()
		return nil
	case clusterv3.Cluster_LOGICAL_DNS:
		host, err := logicalDNSHost(m)
		if err != nil {
			return err
		}
		c.Kind, c.DNSHostname = ClusterLogicalDNS, host
		return nil
	}
	return fmt.Errorf("unsupported cluster type %v", m.GetType())
}

// logicalDNSHost returns the "host:port" of a LOGICAL_DNS cluster, which
// must have one locality holding one endpoint with a socket address.
func logicalDNSHost(m *clusterv3.Cluster) (string, error) {
	la := m.GetLoadAssignment()
	if la == nil {
		return "", errors.New("LOGICAL_DNS cluster needs load_assignment")
	}
	if n := len(la.GetEndpoints()); n != 1 {
		return "", fmt.Errorf("load_assignment: LOGICAL_DNS cluster needs exactly one locality, has %d", n)
	}
	eps := la.GetEndpoints()[0].GetLbEndpoints()
	if n := len(eps); n != 1 {
		return "", fmt.Errorf("load_assignment.endpoints[0]: LOGICAL_DNS cluster needs exactly one endpoint, has %d", n)
	}
	const at = "load_assignment.endpoints[0].lb_endpoints[0]"
	sa := eps[0].GetEndpoint().GetAddress().GetSocketAddress()
	switch {
	case sa == nil:
		return "", fmt.Errorf("%s: endpoint has no socket_address", at)
	case sa.GetResolverName() != "":
		return "", fmt.Errorf("%s: resolver_name %q is not supported", at, sa.GetResolverName())
	case sa.GetAddress() == "":
		return "", fmt.Errorf("%s: address is empty", at)
	case sa.GetPortValue() == 0:
		return "", fmt.Errorf("%s: port_value is missing", at)
	case sa.GetPortValue() > 65535:
		return "", fmt.Errorf("%s: port_value %d is out of range", at, sa.GetPortValue())
	}
	return net.JoinHostPort(sa.GetAddress(), strconv.Itoa(int(sa.GetPortValue()))), nil
}

// checkOutlierDetection applies the gRFC A50 rules. Errors name the field
// without the "outlier_detection." prefix.
func checkOutlierDetection(od *clusterv3.OutlierDetection) error {
	if od == nil {
		return nil
	}
	for _, d := range []struct {
		name string
		v    *durationpb.Duration
	}{
		{"interval", od.GetInterval()},
		{"base_ejection_time", od.GetBaseEjectionTime()},
		{"max_ejection_time", od.GetMaxEjectionTime()},
	} {
		if d.v == nil {
			continue
		}
		v, err := xdsduration.Parse(d.v)
		if err != nil {
			return fmt.Errorf("%s: %v", d.name, err)
		}
		if v == 0 && d.name == "interval" {
			// gRPC would sweep without pause, for as long as the
			// cluster is used; the xDS API requires more than 0.
			return errors.New("interval is 0, must be positive")
		}
	}
	for _, p := range []struct {
		name string
		v    *wrapperspb.UInt32Value
	}{
		{"max_ejection_percent", od.GetMaxEjectionPercent()},
		{"enforcing_success_rate", od.GetEnforcingSuccessRate()},
		{"failure_percentage_threshold", od.GetFailurePercentageThreshold()},
		{"enforcing_failure_percentage", od.GetEnforcingFailurePercentage()},
	} {
		if p.v != nil && p.v.GetValue() > 100 {
			return fmt.Errorf("%s is %d, must be at most 100", p.name, p.v.GetValue())
		}
	}
	return nil
}
