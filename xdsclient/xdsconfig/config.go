package xdsconfig

import (
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
	"github.com/xdslens/xdslens/xdsclient/xdsresource/routeconfig"
)

// Config is everything one gRPC channel needs to route its RPCs, as the
// dependency manager last assembled it from the resources of one listener:
// the Listener, its route configuration, the virtual host chosen for the
// channel's authority, and every cluster that virtual host's routes can
// reach, with their endpoints.
//
// A Config is immutable once delivered, and shared: neither the receiver
// nor the dependency manager modifies it, so it may be read from any
// goroutine (a picker, for instance) without a lock. Its resources are the
// values the client decoded; they must not be modified either.
type Config struct {
	// ListenerName is the name of the Listener resource the manager
	// watches.
	ListenerName string
	// Listener is the client-side Listener (an api_listener).
	Listener *xdsresource.Listener
	// ListenerVersion is the version_info of the response that carried
	// Listener (xdsclient.Resource.Version).
	ListenerVersion string
	// RouteConfigName is the name of the RouteConfiguration fetched with
	// RDS, "" when the route configuration is inline in the Listener.
	RouteConfigName string
	// RouteConfig is the route configuration in use, fetched with RDS or
	// inline.
	RouteConfig *routeconfig.Config
	// RouteConfigVersion is the version_info of the response that carried
	// RouteConfig: of the RDS resource, or of the Listener when inline. A
	// response that resends a resource unchanged changes neither version,
	// so either may be older than the one CSDS shows for the resource.
	RouteConfigVersion string
	// VirtualHost is the virtual host of RouteConfig whose domains match
	// the channel's authority best (gRFC A27 domain matching); it points
	// into RouteConfig.VirtualHosts.
	VirtualHost *routeconfig.VirtualHost
	// Clusters holds, by name, every cluster the routes of VirtualHost
	// name (directly or in weighted clusters) and every cluster reachable
	// from an aggregate one among them. A cluster reached more than once
	// appears once.
	Clusters map[string]*ClusterConfig
	// NodeID is the node ID of the xDS client, for error messages.
	NodeID string
}

// ClusterConfig is one cluster slot of a Config. Exactly one of these holds:
//
//   - Err is set: the cluster cannot be used (its Cluster resource failed,
//     or its aggregate graph is invalid); RPCs routed to it fail with
//     UNAVAILABLE and Err's message.
//   - Cluster.Kind is ClusterAggregate: Leaves lists, in priority order, the
//     names of the EDS and LOGICAL_DNS clusters it expands to, each with
//     its own slot in Config.Clusters.
//   - Cluster.Kind is ClusterEDS or ClusterLogicalDNS (a leaf): Endpoints
//     holds what the channel may connect to, or is nil when the endpoints
//     could not be had, and ResolutionNote says why.
type ClusterConfig struct {
	// Name is the cluster's name.
	Name string
	// Err is the error that makes the cluster unusable, a gRPC status error
	// with code UNAVAILABLE whose message names the resource, the cause and
	// the node ID (a *ResourceError). When Err is set, the other fields but
	// Name are zero.
	Err error
	// Cluster is the Cluster resource.
	Cluster *xdsresource.Cluster
	// Server is the URI of the xDS server that sent the Cluster resource:
	// where load reports go when Cluster.LRSServer is set.
	Server string
	// Version is the version_info of the response that brought Cluster;
	// EndpointsVersion that of the EDS resource behind Endpoints ("" for a
	// LOGICAL_DNS cluster, or when the EDS resource failed). As with
	// Config.ListenerVersion, a resource resent unchanged keeps its
	// version here.
	Version, EndpointsVersion string
	// Leaves are, for an aggregate cluster, the leaf clusters it expands
	// to, depth first, in priority order, each once (gRFC A37).
	Leaves []string
	// Endpoints are, for a leaf cluster, its endpoints: the EDS resource
	// of an EDS cluster, or, for a LOGICAL_DNS cluster, one locality at
	// priority 0 holding one endpoint with every address the DNS name
	// resolved to. Nil when they could not be had (the EDS resource failed,
	// or DNS resolution failed): RPCs routed to the cluster then fail, with
	// ResolutionNote in their message.
	Endpoints *xdsresource.ClusterLoadAssignment
	// ResolutionNote is, for a leaf cluster, what a data-plane RPC that
	// finds no usable endpoint in the cluster should say besides its own
	// error (gRFC A88, "Handling Ambient Errors"): the ambient errors of
	// the Listener, the RouteConfiguration and the cluster's own Cluster
	// and endpoint resources, or, when there are none, the node ID.
	ResolutionNote string
}

// IsLeaf reports whether c is a usable EDS or LOGICAL_DNS cluster slot.
func (c *ClusterConfig) IsLeaf() bool {
	return c.Err == nil && c.Cluster != nil && c.Cluster.Kind != xdsresource.ClusterAggregate
}
