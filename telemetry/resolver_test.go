package telemetry_test

import (
	"testing"

	"google.golang.org/grpc/resolver"
)

// TestNoResolverRegistered checks that importing telemetry registers no
// gRPC resolver: the data-plane metrics, which import xdsgrpc and so its
// "xdslens" scheme, are package telemetry/dataplane's.
func TestNoResolverRegistered(t *testing.T) {
	if b := resolver.Get("xdslens"); b != nil {
		t.Errorf("the test binary of telemetry has a resolver for scheme xdslens (%T): importing telemetry imports xdsgrpc", b)
	}
}
