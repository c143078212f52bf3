package xdsresource_test

import (
	"fmt"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdslens/xdslens/xdsclient/xdsresource"
)

func ExampleType_Decode() {
	ads := &corev3.ConfigSource{ConfigSourceSpecifier: &corev3.ConfigSource_Ads{Ads: &corev3.AggregatedConfigSource{}}}
	resource, _ := anypb.New(&clusterv3.Cluster{
		Name:                 "c1",
		ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_EDS},
		EdsClusterConfig:     &clusterv3.Cluster_EdsClusterConfig{EdsConfig: ads, ServiceName: "c1-eds"},
	})

	name, value, err := xdsresource.ClusterType.Decode(xdsresource.DecodeOptions{}, resource)
	if err != nil {
		fmt.Println("NACK:", err)
		return
	}
	cluster := value.(*xdsresource.Cluster)
	fmt.Println(name, cluster.Kind, cluster.EDSName())
	fmt.Println(cluster.Summary())

	// An invalid cluster is reported by name, with the rule it breaks.
	resource, _ = anypb.New(&clusterv3.Cluster{
		Name:                 "c2",
		ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_EDS},
		EdsClusterConfig:     &clusterv3.Cluster_EdsClusterConfig{EdsConfig: ads},
		LbPolicy:             clusterv3.Cluster_MAGLEV,
	})
	name, _, err = xdsresource.ClusterType.Decode(xdsresource.DecodeOptions{}, resource)
	fmt.Println(name, "NACK:", err)

	// Output:
	// c1 EDS c1-eds
	// cluster c1: EDS service "c1-eds", round_robin, max_requests 1024
	// c2 NACK: cds "c2": unsupported lb_policy MAGLEV
}
