package demo

import (
	"context"
	"fmt"
	"net"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/xdslens/xdslens/internal/xdswatch/demo/controlplane"
	"github.com/xdslens/xdslens/xdsclient"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
)

// The resilience step of the tour.
const (
	// tourFaultDelay is the delay the fault filter puts on every RPC.
	tourFaultDelay = 5 * time.Millisecond
	// tourRetries is num_retries of the route's retry_policy.
	tourRetries = 2
)

// resilienceSteps are the tour's last steps, after the server's (version
// 10): a backend that fails every RPC joins the demo cluster, under
// outlier detection, with retries on the route and the fault filter on
// the listener; then the configuration of version 10 again.
func (t *tour) resilienceSteps(serve func(string, func([]proto.Message) []proto.Message) func(context.Context) error) []Step {
	cds := xdsresource.ClusterType
	at := func(version string) Cache {
		return allAt(t.specs, version, Primary).with(cds, TimeoutCluster, empty(xdsclient.StateTimeout))
	}
	ok := RPCGoal{Code: codes.OK}
	one, none := 1, 0
	return []Step{{
		Title: "resilience",
		what: fmt.Sprintf("version 11 adds to cluster %s a third endpoint, a backend that fails every RPC with UNAVAILABLE, and gives the cluster "+
			"outlier detection (gRFC A50: failure_percentage every two tour steps, ejecting an endpoint that fails more than half of its RPCs, "+
			"at most half of the endpoints), the route a retry_policy (gRFC A44: retry_on unavailable, %d retries) and the listener the fault "+
			"injection filter (gRFC A33), which delays every RPC by %v: an RPC that reaches the failing backend is retried on another one and "+
			"succeeds (its rpc line shows 2 attempts, every line fault delay), and at the end of an interval outlier detection ejects the "+
			"failing backend (an ejection line): 1 of the cluster's 3 endpoints, which the dashboards' Resilience row shows with the retries "+
			"and faults; every resource is ACKED at version 11", Cluster, tourRetries, tourFaultDelay),
		act:   serve("11", func([]proto.Message) []proto.Message { return t.demo.resilienceConfig(2 * t.step) }),
		Goals: []Goal{{Cache: at("11"), RPC: ok, Ejected: &one}},
	}, {
		Title: "healthy again",
		what: "version 12 is version 10 again, without the failing backend, outlier detection, retries and faults: the ejected endpoint " +
			"leaves the cluster (an ejection line, returned); every resource is ACKED at version 12; once the channel uses it, RPCs succeed in one attempt, without fault",
		act:   serve("12", tourConfig),
		Goals: []Goal{{Cache: at("12"), RPC: RPCGoal{Code: codes.OK, Plain: true}, Ejected: &none}},
	}}
}

// ejectedText describes g's ejected endpoints for the tour's lines, ""
// when g says nothing of them.
func ejectedText(g Goal) string {
	switch {
	case g.Ejected == nil:
		return ""
	case *g.Ejected == 0:
		return "; no endpoint of " + Cluster + " ejected"
	}
	plural := "s"
	if *g.Ejected == 1 {
		plural = ""
	}
	return fmt.Sprintf("; outlier detection has ejected %d endpoint%s of %s", *g.Ejected, plural, Cluster)
}

// resilienceConfig is the configuration of the resilience step: base with
// the failing backend as a third endpoint of Cluster, which gets
// outlier detection every interval, a retry policy on the route and the
// fault filter on the listener.
func (td *tourDemo) resilienceConfig(interval time.Duration) []proto.Message {
	var addrs []string
	for _, b := range td.backends {
		addrs = append(addrs, b.Addr())
	}
	addrs = append(addrs, td.sick.addr)
	out := make([]proto.Message, 0, len(td.base))
	for _, m := range td.base {
		switch r := m.(type) {
		case *listenerv3.Listener:
			if r.GetName() == listenerName {
				m = controlplane.ListenerWithFault(listenerName, listenerName+"-route", controlplane.FaultDelay(tourFaultDelay, 100), 0)
			}
		case *routev3.RouteConfiguration:
			rc := proto.Clone(r).(*routev3.RouteConfiguration)
			controlplane.WithRetry(rc.GetVirtualHosts()[0].GetRoutes()[0].GetRoute(), "unavailable", tourRetries, 10*time.Millisecond, 100*time.Millisecond)
			m = rc
		case *clusterv3.Cluster:
			if r.GetName() == Cluster {
				// gRFC A50's default base ejection time (30s) keeps the
				// backend out for the rest of the step.
				c := controlplane.WithOutlierDetection(proto.Clone(r).(*clusterv3.Cluster), interval, 30*time.Second)
				// The demo's RPCs are few: the failing backend has about
				// three in an interval, of which two are enough. (Two, not
				// one: a status's calls series is born with its first
				// call, which a rate cannot count, and the dashboards
				// should see the failing backend's calls.)
				c.OutlierDetection.FailurePercentageRequestVolume = wrapperspb.UInt32(2)
				m = c
			}
		case *endpointv3.ClusterLoadAssignment:
			if r.GetClusterName() == Cluster {
				m = controlplane.Endpoints(Cluster, addrs...)
			}
		}
		out = append(out, m)
	}
	return out
}

// sickBackend is a gRPC server on 127.0.0.1 that fails every RPC with
// UNAVAILABLE: the failing endpoint of the resilience step.
type sickBackend struct {
	srv  *grpc.Server
	addr string
}

// startSickBackend starts a sickBackend on a port the system chooses.
func startSickBackend() (*sickBackend, error) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("failing backend: %w", err)
	}
	addr := lis.Addr().String()
	srv := grpc.NewServer(grpc.UnknownServiceHandler(func(any, grpc.ServerStream) error {
		return status.Errorf(codes.Unavailable, "demo backend %s fails every RPC", addr)
	}))
	go srv.Serve(lis)
	return &sickBackend{srv: srv, addr: addr}, nil
}

// stop stops the server; its connections end at once.
func (b *sickBackend) stop() { b.srv.Stop() }
