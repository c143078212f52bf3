package xdstest

import (
	"fmt"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
)

// Response returns a State of the World response of typeURL at version
// holding resources, each packed into an Any. A resource that is already an
// *anypb.Any is used as it is, which lets a test send resources of the
// wrong type or with bytes that do not decode. The nonce is left empty for
// [Stream.Send] to fill in. It panics if a resource cannot be marshalled.
func Response(typeURL, version string, resources ...proto.Message) *discoveryv3.DiscoveryResponse {
	resp := &discoveryv3.DiscoveryResponse{TypeUrl: typeURL, VersionInfo: version}
	for i, r := range resources {
		if a, ok := r.(*anypb.Any); ok {
			resp.Resources = append(resp.Resources, a)
			continue
		}
		a, err := anypb.New(r)
		if err != nil {
			panic(fmt.Sprintf("xdstest.Response(%q): resources[%d]: %v", typeURL, i, err))
		}
		resp.Resources = append(resp.Resources, a)
	}
	return resp
}

// ResourceError returns a resource error entry for the resource_errors
// field of a response: resource name with a status of code and msg.
func ResourceError(name string, code codes.Code, msg string) *discoveryv3.ResourceError {
	return &discoveryv3.ResourceError{
		ResourceName: &discoveryv3.ResourceName{Name: name},
		ErrorDetail:  &status.Status{Code: int32(code), Message: msg},
	}
}

// ErrorResponse returns a State of the World response of typeURL at
// version with no resources and errs as its resource_errors.
func ErrorResponse(typeURL, version string, errs ...*discoveryv3.ResourceError) *discoveryv3.DiscoveryResponse {
	r := Response(typeURL, version)
	r.ResourceErrors = errs
	return r
}

// InvalidCluster returns a Cluster named name that gRPC rejects: its
// discovery type, STATIC, is not supported.
func InvalidCluster(name string) *clusterv3.Cluster {
	return &clusterv3.Cluster{Name: name, ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_STATIC}}
}

// DeltaResource returns one resource of a delta response: r, named name at
// version, packed into an Any (an *anypb.Any is used as it is, as
// [Response] does). A nil r makes a resource with no body, which the
// protocol uses as a heartbeat. It panics if r cannot be marshalled.
func DeltaResource(name, version string, r proto.Message) *discoveryv3.Resource {
	out := &discoveryv3.Resource{Name: name, Version: version}
	if r == nil {
		return out
	}
	a, ok := r.(*anypb.Any)
	if !ok {
		var err error
		if a, err = anypb.New(r); err != nil {
			panic(fmt.Sprintf("xdstest.DeltaResource(%q): %v", name, err))
		}
	}
	out.Resource = a
	return out
}

// DeltaResponse returns an incremental response of typeURL whose
// system_version_info is version, carrying resources. The nonce is left
// empty for [DeltaStream.Send] to fill in.
func DeltaResponse(typeURL, version string, resources ...*discoveryv3.Resource) *discoveryv3.DeltaDiscoveryResponse {
	return &discoveryv3.DeltaDiscoveryResponse{TypeUrl: typeURL, SystemVersionInfo: version, Resources: resources}
}

// DeltaRemoval returns an incremental response of typeURL at version that
// names removed in removed_resources.
func DeltaRemoval(typeURL, version string, removed ...string) *discoveryv3.DeltaDiscoveryResponse {
	return &discoveryv3.DeltaDiscoveryResponse{TypeUrl: typeURL, SystemVersionInfo: version, RemovedResources: removed}
}
