package xdsgrpc

import (
	"google.golang.org/grpc/balancer"
	estats "google.golang.org/grpc/experimental/stats"
	"google.golang.org/grpc/serviceconfig"

	"github.com/xdslens/xdslens/internal/hookqueue"
	"github.com/xdslens/xdslens/xdsclient/lrs"
	"github.com/xdslens/xdslens/xdsclient/xdsconfig"
	"github.com/xdslens/xdslens/xdsgrpc/internal/clusterlb"
)

// newClusterBalancer builds the policy of one route-level cluster.
func newClusterBalancer(cc balancer.ClientConn, opts balancer.BuildOptions) balancer.Balancer {
	return clusterlb.New(cc, opts)
}

// clusterConfig is the config of the policy of the route-level cluster
// name, whose usable leaves are leaves.
func clusterConfig(name string, leaves []*xdsconfig.ClusterConfig, cs *channelState) serviceconfig.LoadBalancingConfig {
	return &clusterlb.Config{
		Name:            name,
		Leaves:          leaves,
		LoadReporter:    cs.client,
		Counters:        cs.counters.c,
		Hooks:           cs.clusterHooks,
		Certificates:    cs.resolver.certs,
		FailoverTimeout: cs.builder.opts.failoverTimeout,
		Rand:            cs.builder.opts.rand,
	}
}

// clusterHooks returns the hooks the cluster policies of the channels of
// target call: each passes its event to the Builder's hooks as they are at
// that moment. Those of the policies' own goroutines (gRPC's balancer
// serializer, which closing the channel waits for) go through the
// channel's queue q; those of a pick run on the RPC's goroutine.
func (b *Builder) clusterHooks(target string, q *hookqueue.Queue) *clusterlb.Hooks {
	picked := func(pi PickInfo) {
		if h := b.hooks.Load(); h != nil && h.Picked != nil {
			pi.Target = target
			h.Picked(pi)
		}
	}
	return &clusterlb.Hooks{
		Dropped: func(i clusterlb.DropInfo) {
			picked(PickInfo{Cluster: i.Cluster, Leaf: i.Leaf, Outcome: PickDropped, Category: i.Category})
		},
		CircuitBroken: func(i clusterlb.CircuitBreakerInfo) {
			picked(PickInfo{Cluster: i.Cluster, Leaf: i.Leaf, Outcome: PickOverloaded})
		},
		NoEndpoint: func(i clusterlb.NoEndpointInfo) {
			picked(PickInfo{Cluster: i.Cluster, Leaf: i.Leaf, Policy: i.Policy, Outcome: PickNoEndpoint, Err: i.Err})
		},
		CallStarted: func(i clusterlb.CallInfo) {
			picked(PickInfo{Cluster: i.Cluster, Leaf: i.Leaf, Policy: i.Policy, Outcome: PickSent})
		},
		CallFinished: func(i clusterlb.CallInfo, err error) {
			if h := b.hooks.Load(); h != nil && h.CallFinished != nil {
				h.CallFinished(CallEndInfo{Target: target, Cluster: i.Cluster, Leaf: i.Leaf, Err: err})
			}
		},
		Metric: func(i clusterlb.MetricInfo) {
			if h := b.hooks.Load(); h != nil && h.LBMetric != nil {
				mi := LBMetricInfo{Target: target, Cluster: i.Cluster, Leaf: i.Leaf, Name: i.Descriptor.Name, Unit: i.Descriptor.Unit,
					Histogram: i.Descriptor.Type == estats.MetricTypeFloatHisto || i.Descriptor.Type == estats.MetricTypeIntHisto, Value: i.Value}
				if i.Locality != (lrs.Locality{}) {
					mi.Locality = clusterlb.LocalityLabel(i.Locality)
				}
				q.Post(func() { h.LBMetric(mi) })
			}
		},
		Ejection: func(i clusterlb.EjectionInfo) {
			if h := b.hooks.Load(); h != nil && h.Ejection != nil {
				ei := EjectionInfo{Target: target, Cluster: i.Cluster, Leaf: i.Leaf, Address: i.Address, Ejected: i.Ejected,
					Algorithm: i.Algorithm, Successes: i.Successes, Failures: i.Failures, Threshold: i.Threshold, Multiplier: i.Multiplier,
					EjectedEndpoints: i.EjectedEndpoints, Endpoints: i.Endpoints}
				q.Post(func() { h.Ejection(ei) })
			}
		},
		ConnectionChanged: func(i clusterlb.ConnectionInfo) {
			if h := b.hooks.Load(); h != nil && h.ConnectionChanged != nil {
				ci := ConnectionInfo{Target: target, Cluster: i.Cluster, Leaf: i.Leaf, Locality: clusterlb.LocalityLabel(i.Locality),
					Policy: i.Policy, Address: i.Address, From: i.From, To: i.To}
				q.Post(func() { h.ConnectionChanged(ci) })
			}
		},
	}
}
