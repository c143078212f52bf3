package demo

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	statuspb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"github.com/xdslens/xdslens/internal/xdswatch/demo/controlplane"
	"github.com/xdslens/xdslens/xdsclient/bootstrap"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
)

// Names and versions of the demo tour.
const (
	// tourMissing is a cluster no server has, which the route names for
	// a step.
	tourMissing = "tour-missing"
	// TimeoutCluster is a cluster no server has, which the tour watches
	// on the secondary.
	TimeoutCluster = "tour-timeout"
	// tourTP3Version is the version whose CDS response carries a TP3 error
	// for Cluster.
	tourTP3Version = "5"
	// tourFallbackVersion is the version the secondary serves.
	tourFallbackVersion = "fallback-1"
	// DefaultTourStep is how long the tour shows each state.
	DefaultTourStep = 3 * time.Second
	// minTourWait bounds from below how long the tour waits for the client
	// to show a step's effect before it says so and moves on.
	minTourWait = 30 * time.Second
	// rebindWait bounds how long the primary's address may stay busy
	// when the primary comes back.
	rebindWait = 5 * time.Second
)

// tourDemo is the demo control plane of the tour: the primary server of
// startDemo, which the tour stops and starts again on the same address, and
// a secondary server that the bootstrap lists second.
type tourDemo struct {
	*demo
	secondary *controlplane.Server
	// base is the demo configuration of version 1 (demo.resources).
	base []proto.Message
	// sick is the backend of the resilience step, which fails every RPC.
	sick *sickBackend

	mu      sync.Mutex // guards primary
	primary *controlplane.Server
}

// startTourDemo starts the demo's primary server, which adds a TP3 error to
// the CDS response of version tourTP3Version, and a secondary server
// serving at version tourFallbackVersion what the primary serves when the
// tour falls back to it (tourConfig), with resource_timer_is_transient_error,
// and the failing backend of the resilience step. The bootstrap lists both
// servers.
func startTourDemo(ctx context.Context, serverAddrs []string) (*tourDemo, error) {
	d, err := startDemo(ctx, serverAddrs, tourCallbacks())
	if err != nil {
		return nil, err
	}
	td := &tourDemo{demo: d, primary: d.srv, base: d.resources}
	td.stop = td.stopServers
	secondary, err := controlplane.Start(ctx, "127.0.0.1:0", controlplane.WithDefaultNode())
	if err != nil {
		td.stop()
		return nil, err
	}
	td.secondary = secondary
	if td.sick, err = startSickBackend(); err != nil {
		td.stop()
		return nil, err
	}
	if err := secondary.SetResources(ctx, "", tourFallbackVersion, tourConfig(td.base)...); err != nil {
		td.stop()
		return nil, err
	}
	td.bootstrap, err = bootstrap.Parse(bootstrapJSON(d.certs,
		bootstrapServer{URI: d.addr},
		bootstrapServer{URI: secondary.Addr(), Features: []string{bootstrap.FeatureResourceTimerIsTransientError}},
	))
	if err != nil {
		td.stop()
		return nil, err
	}
	return td, nil
}

// tourCallbacks returns the primary server's callbacks: the CDS response
// of version tourTP3Version carries an xRFC TP3 error for Cluster, which
// go-control-plane cannot send by itself; and a NACK waits for the next
// version. go-control-plane answers a NACK at once with the version it
// still holds, which the client rejects again, in a loop as fast as the
// two can go; the callbacks make a NACK read as if it named the version it
// rejects, so the server sends nothing until the configuration changes.
func tourCallbacks() controlplane.Option {
	var (
		mu   sync.Mutex
		sent = map[int64]map[string]string{} // stream ID → type URL → last version sent
	)
	return controlplane.WithCallbacks(controlplane.CallbackFuncs{
		StreamRequest: func(id int64, req *discoveryv3.DiscoveryRequest) error {
			if req.GetErrorDetail() == nil {
				return nil
			}
			mu.Lock()
			defer mu.Unlock()
			if v, ok := sent[id][req.GetTypeUrl()]; ok {
				req.VersionInfo = v
			}
			return nil
		},
		StreamResponse: func(_ context.Context, id int64, _ *discoveryv3.DiscoveryRequest, resp *discoveryv3.DiscoveryResponse) {
			mu.Lock()
			if sent[id] == nil {
				sent[id] = map[string]string{}
			}
			sent[id][resp.GetTypeUrl()] = resp.GetVersionInfo()
			mu.Unlock()
			if resp.GetTypeUrl() != xdsresource.ClusterType.TypeURL() || resp.GetVersionInfo() != tourTP3Version {
				return
			}
			resp.ResourceErrors = []*discoveryv3.ResourceError{{
				ResourceName: &discoveryv3.ResourceName{Name: Cluster},
				ErrorDetail: &statuspb.Status{
					Code:    int32(codes.Unavailable),
					Message: "demo control plane: the backend that computes cluster " + Cluster + " is down",
				},
			}}
		},
		StreamClosed: func(id int64, _ *corev3.Node) {
			mu.Lock()
			delete(sent, id)
			mu.Unlock()
		},
	})
}

// stopServers stops both servers and the backends.
func (td *tourDemo) stopServers() {
	td.stopPrimary()
	if td.secondary != nil {
		td.secondary.Stop()
	}
	if td.sick != nil {
		td.sick.stop()
	}
	td.stopBackends()
}

// currentPrimary returns the primary server last started.
func (td *tourDemo) currentPrimary() *controlplane.Server {
	td.mu.Lock()
	defer td.mu.Unlock()
	return td.primary
}

// setPrimary serves resources at version on the primary.
func (td *tourDemo) setPrimary(ctx context.Context, version string, resources []proto.Message) error {
	return td.currentPrimary().SetResources(ctx, "", version, resources...)
}

// stopPrimary takes the primary away: its streams end and its port
// refuses connections.
func (td *tourDemo) stopPrimary() { td.currentPrimary().Stop() }

// restartPrimary starts the primary again on its address, with the
// options it started with (LRS and the tour's callbacks), serving
// resources at version.
func (td *tourDemo) restartPrimary(ctx context.Context, version string, resources []proto.Message) error {
	ctx, cancel := context.WithTimeout(ctx, rebindWait)
	defer cancel()
	var srv *controlplane.Server
	retry := time.NewTicker(50 * time.Millisecond)
	defer retry.Stop()
	for {
		var err error
		srv, err = controlplane.Start(ctx, td.addr, serverOptions(tourCallbacks())...)
		if err == nil {
			break
		}
		// The system may hold the port for a moment after the stop; a
		// bind is not an event anyone can wait on, so it is retried.
		select {
		case <-ctx.Done():
			return fmt.Errorf("primary server back on %s: %w", td.addr, err)
		case <-retry.C:
		}
	}
	td.mu.Lock()
	td.primary = srv
	td.mu.Unlock()
	return srv.SetResources(ctx, "", version, resources...)
}

// The tour's configurations, derived from the demo's of version 1.

// withCluster returns base with the cluster named name replaced by c, or
// left out when c is nil.
func withCluster(base []proto.Message, name string, c *clusterv3.Cluster) []proto.Message {
	out := make([]proto.Message, 0, len(base))
	for _, m := range base {
		if old, ok := m.(*clusterv3.Cluster); ok && old.GetName() == name {
			if c != nil {
				out = append(out, c)
			}
			continue
		}
		out = append(out, m)
	}
	return out
}

// withOneEndpoint returns base with the endpoints of clusterName cut down
// to their first endpoint.
func withOneEndpoint(base []proto.Message, clusterName string) []proto.Message {
	out := make([]proto.Message, 0, len(base))
	for _, m := range base {
		if cla, ok := m.(*endpointv3.ClusterLoadAssignment); ok && cla.GetClusterName() == clusterName {
			cla = proto.Clone(cla).(*endpointv3.ClusterLoadAssignment)
			for _, loc := range cla.GetEndpoints() {
				loc.LbEndpoints = loc.LbEndpoints[:min(1, len(loc.LbEndpoints))]
			}
			m = cla
		}
		out = append(out, m)
	}
	return out
}

// tourConfig is the configuration of versions 2, 7 and 8 of the tour and
// of the secondary server: base with one endpoint fewer.
func tourConfig(base []proto.Message) []proto.Message { return withOneEndpoint(base, Cluster) }

// withoutCluster is the configuration of versions 4 and 5: tourConfig
// without Cluster.
func withoutCluster(base []proto.Message) []proto.Message {
	return withCluster(tourConfig(base), Cluster, nil)
}

// withRoute returns base with the route configuration sending every RPC
// to cluster.
func withRoute(base []proto.Message, cluster string) []proto.Message {
	out := slices.Clone(base)
	for i, m := range out {
		if rc, ok := m.(*routev3.RouteConfiguration); ok {
			out[i] = controlplane.RouteConfig(rc.GetName(), []string{"*"}, cluster)
		}
	}
	return out
}

// unsupportedCluster is a cluster gRPC rejects: STATIC is not a type it
// supports.
func unsupportedCluster(name string) *clusterv3.Cluster {
	return &clusterv3.Cluster{Name: name, ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_STATIC}}
}
