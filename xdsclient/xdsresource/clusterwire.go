package xdsresource

import (
	"bytes"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/xdslens/xdslens/xdsclient/xdsresource/internal/decoding"
)

// Field numbers of the fields that fillCluster decodes by hand (checked
// against the descriptors in tests).
const (
	clusterName            protowire.Number = 1  // Cluster.name
	clusterType            protowire.Number = 2  // Cluster.type (oneof cluster_discovery_type)
	clusterEDSConfig       protowire.Number = 3  // Cluster.eds_cluster_config
	clusterConnectTimeout  protowire.Number = 4  // Cluster.connect_timeout
	clusterLBPolicy        protowire.Number = 6  // Cluster.lb_policy
	clusterLRSServer       protowire.Number = 42 // Cluster.lrs_server
	edsConfigSource        protowire.Number = 1  // Cluster.EdsClusterConfig.eds_config
	edsServiceName         protowire.Number = 2  // Cluster.EdsClusterConfig.service_name
	configSourceADS        protowire.Number = 3  // ConfigSource.ads (oneof config_source_specifier)
	configSourceSelf       protowire.Number = 5  // ConfigSource.self (same oneof)
	configSourceAPIVersion protowire.Number = 6  // ConfigSource.resource_api_version
	durationSeconds        protowire.Number = 1  // Duration.seconds
	durationNanos          protowire.Number = 2  // Duration.nanos
)

// How deeply the messages that fillCluster decodes by hand are nested in
// the resource: the runtime's recursion limit counts from the resource.
const (
	clusterDepth          = 1
	edsClusterConfigDepth = 2
	edsConfigSourceDepth  = 3
	connectTimeoutDepth   = 2
	lrsServerDepth        = 2
)

// clusterScratch is where decodeCluster builds the Cluster message that it
// validates: the message and the sub-messages of the common shape of an
// EDS cluster (and of its lrs_server), which fillCluster fills by hand
// from the wire without allocating them. It is reused from resource to
// resource, so the validated Cluster must keep no pointer into it:
// validateCluster keeps only outlier_detection, load_balancing_policy and
// transport_socket data, which the runtime allocates.
type clusterScratch struct {
	m       clusterv3.Cluster
	typ     clusterv3.Cluster_Type
	eds     clusterv3.Cluster_EdsClusterConfig
	edsSrc  sourceScratch // eds_cluster_config.eds_config
	lrs     sourceScratch // lrs_server
	timeout durationpb.Duration

	// The name and service_name last seen, made strings at the end (one
	// string when they are equal, as they often are).
	name, service       []byte
	hasName, hasService bool
	// runtime is set when the protobuf runtime wrote into m itself, which
	// may then hold any field; else m holds only the fields set by hand.
	runtime bool
}

// decode fills s.m, empty, from b, the serialized Cluster, by hand
// (fillCluster) or, when b is malformed, with the runtime, for its error.
func (s *clusterScratch) decode(b []byte) error {
	if s.fillCluster(b) {
		return nil
	}
	s.runtime = true // the walk may have stopped before recording it
	s.reset()
	s.runtime = true
	return decoding.Unmarshal(b, &s.m)
}

// reset makes s ready for the next resource, dropping every pointer that
// the last one left. Assigning the zero value is what the generated Reset
// methods do, less the caching of the message's runtime information,
// which the runtime does again when it needs it.
func (s *clusterScratch) reset() {
	if s.runtime {
		s.m.Reset()
	} else {
		m := &s.m
		m.Name, m.ClusterDiscoveryType, m.EdsClusterConfig, m.ConnectTimeout, m.LbPolicy, m.LrsServer = "", nil, nil, nil, 0, nil
	}
	s.typ.Type = 0
	s.eds = clusterv3.Cluster_EdsClusterConfig{}
	s.edsSrc = sourceScratch{}
	s.lrs = sourceScratch{}
	s.timeout = durationpb.Duration{}
	s.name, s.service, s.hasName, s.hasService, s.runtime = nil, nil, false, false, false
}

// fillCluster fills s.m, empty, from b, the serialized Cluster, as
// proto.Unmarshal would: it takes the fields of the common shape of an
// EDS cluster itself (name, type, eds_cluster_config with an ADS or self
// config source and service_name, connect_timeout, lb_policy, lrs_server)
// and leaves every other field to the protobuf runtime, in wire order
// (see wireFields). It reports false when b cannot be decoded; s.m is
// then to be reset and b decoded by the runtime, for its error.
func (s *clusterScratch) fillCluster(b []byte) bool {
	m := &s.m
	w := newWireFields(b, m, clusterDepth)
	for num, typ := range w.fields() {
		switch {
		case num == clusterName && typ == protowire.BytesType:
			s.name, s.hasName = w.str(), true
		case num == clusterType && typ == protowire.VarintType:
			s.typ.Type = clusterv3.Cluster_DiscoveryType(int32(w.varint()))
			m.ClusterDiscoveryType = &s.typ
		case num == clusterEDSConfig && typ == protowire.BytesType:
			if m.EdsClusterConfig == nil {
				m.EdsClusterConfig = &s.eds
			}
			if v := w.bytes(); w.ok && !s.fillEDSConfig(v, m.EdsClusterConfig) {
				return false
			}
		case num == clusterConnectTimeout && typ == protowire.BytesType:
			if m.ConnectTimeout == nil {
				m.ConnectTimeout = &s.timeout
			}
			if v := w.bytes(); w.ok && !fillDuration(v, m.ConnectTimeout, connectTimeoutDepth) {
				return false
			}
		case num == clusterLBPolicy && typ == protowire.VarintType:
			m.LbPolicy = clusterv3.Cluster_LbPolicy(int32(w.varint()))
		case num == clusterLRSServer && typ == protowire.BytesType:
			if m.LrsServer == nil {
				m.LrsServer = &s.lrs.src
			}
			if v := w.bytes(); w.ok && !s.lrs.fill(v, m.LrsServer, lrsServerDepth) {
				return false
			}
		default:
			w.skip(num, typ)
		}
	}
	ok := w.done()
	s.runtime = s.runtime || w.merged
	if !ok {
		return false
	}
	if s.hasName {
		m.Name = string(s.name)
	}
	if s.hasService {
		if s.hasName && bytes.Equal(s.service, s.name) {
			m.EdsClusterConfig.ServiceName = m.Name
		} else {
			m.EdsClusterConfig.ServiceName = string(s.service)
		}
	}
	return true
}

// fillEDSConfig merges b, the fields of an EdsClusterConfig, into e.
func (s *clusterScratch) fillEDSConfig(b []byte, e *clusterv3.Cluster_EdsClusterConfig) bool {
	w := newWireFields(b, e, edsClusterConfigDepth)
	for num, typ := range w.fields() {
		switch {
		case num == edsConfigSource && typ == protowire.BytesType:
			if e.EdsConfig == nil {
				e.EdsConfig = &s.edsSrc.src
			}
			if v := w.bytes(); w.ok && !s.edsSrc.fill(v, e.EdsConfig, edsConfigSourceDepth) {
				return false
			}
		case num == edsServiceName && typ == protowire.BytesType:
			s.service, s.hasService = w.str(), true
		default:
			w.skip(num, typ)
		}
	}
	return w.done()
}

// sourceScratch is the scratch space of one ConfigSource: the message and
// its ads and self members.
type sourceScratch struct {
	src     corev3.ConfigSource
	ads     corev3.ConfigSource_Ads
	adsMsg  corev3.AggregatedConfigSource
	self    corev3.ConfigSource_Self
	selfMsg corev3.SelfConfigSource
}

// fill merges b, the fields of the ConfigSource c nested depth messages
// deep, into c. Of the oneof config_source_specifier, ads and self are
// taken by hand: a member merges into the same member and replaces
// another.
func (s *sourceScratch) fill(b []byte, c *corev3.ConfigSource, depth int) bool {
	w := newWireFields(b, c, depth)
	for num, typ := range w.fields() {
		switch {
		case num == configSourceADS && typ == protowire.BytesType:
			v := w.bytes()
			ads, same := c.ConfigSourceSpecifier.(*corev3.ConfigSource_Ads)
			if !same || ads.Ads == nil {
				s.adsMsg = corev3.AggregatedConfigSource{}
				s.ads.Ads = &s.adsMsg
				ads = &s.ads
				c.ConfigSourceSpecifier = ads
			}
			if w.ok && !mergeWire(v, ads.Ads, depth+1) {
				return false
			}
		case num == configSourceSelf && typ == protowire.BytesType:
			v := w.bytes()
			self, same := c.ConfigSourceSpecifier.(*corev3.ConfigSource_Self)
			if !same || self.Self == nil {
				s.selfMsg = corev3.SelfConfigSource{}
				s.self.Self = &s.selfMsg
				self = &s.self
				c.ConfigSourceSpecifier = self
			}
			if w.ok && !mergeWire(v, self.Self, depth+1) {
				return false
			}
		case num == configSourceAPIVersion && typ == protowire.VarintType:
			c.ResourceApiVersion = corev3.ApiVersion(int32(w.varint()))
		default:
			w.skip(num, typ)
		}
	}
	return w.done()
}

// fillDuration merges b, the fields of a Duration nested depth messages
// deep, into d.
func fillDuration(b []byte, d *durationpb.Duration, depth int) bool {
	w := newWireFields(b, d, depth)
	for num, typ := range w.fields() {
		switch {
		case num == durationSeconds && typ == protowire.VarintType:
			d.Seconds = int64(w.varint())
		case num == durationNanos && typ == protowire.VarintType:
			d.Nanos = int32(w.varint())
		default:
			w.skip(num, typ)
		}
	}
	return w.done()
}
