package httpfilter_test

import (
	"context"
	"fmt"
	"testing"

	rbacconfigv3 "github.com/envoyproxy/go-control-plane/envoy/config/rbac/v3"
	"google.golang.org/grpc/metadata"

	"github.com/xdslens/xdslens/httpfilter"
	"github.com/xdslens/xdslens/internal/testing/certtest"
)

// benchPolicies returns n ALLOW policies in the shape a mesh control plane
// writes: policy i allows the methods of service i on port 8443 to the
// workload identity of namespace i, from the pod network; headers adds a
// header matcher to each.
func benchPolicies(n int, headers bool) map[string]*rbacconfigv3.Policy {
	ps := make(map[string]*rbacconfigv3.Policy, n)
	for i := range n {
		p := &rbacconfigv3.Policy{
			Permissions: perms(andPerms(
				pathPerm(prefix(fmt.Sprintf("/svc%d.Service/", i))),
				&rbacconfigv3.Permission{Rule: &rbacconfigv3.Permission_DestinationPort{DestinationPort: 8443}},
			)),
			Principals: ids(andIDs(
				authID(exact(fmt.Sprintf("spiffe://td/ns/ns%d/sa/client", i))),
				sourceID(cidr("192.168.0.0", 16)),
			)),
		}
		if headers {
			p.Permissions = perms(andPerms(p.Permissions[0], headerPerm(exactHeader("x-tenant", fmt.Sprintf("tenant-%d", i)))))
		}
		ps[fmt.Sprintf("policy-%03d", i)] = p
	}
	return ps
}

// BenchmarkRBAC100Policies decides one RPC against 100 ALLOW policies,
// matched by the last one in name order, so every policy is evaluated;
// "denied" matches none. With headers, every policy also reads a header.
func BenchmarkRBAC100Policies(b *testing.B) {
	ca := certtest.NewCA(b, "ca")
	conn := tlsConn(b, ca, &certtest.Names{URIs: []string{"spiffe://td/ns/ns99/sa/client"}})
	for _, bc := range []struct {
		name    string
		headers bool
		method  string
	}{
		{"allowed", false, "/svc99.Service/Get"},
		{"denied", false, "/svc100.Service/Get"},
		{"allowed/headers", true, "/svc99.Service/Get"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			e := httpfilter.ServerEnv{FilterName: "authz", Authz: func(httpfilter.AuthzDecision) {}}
			in := interceptor(b, rules(rbacconfigv3.RBAC_ALLOW, benchPolicies(100, bc.headers)), nil, e)
			ctx := metadata.NewIncomingContext(context.Background(), metadata.Pairs(
				":authority", "svc.example.com", "content-type", "application/grpc", "x-tenant", "tenant-99"))
			call := httpfilter.ServerCall{Method: bc.method, Conn: conn}
			b.ReportAllocs()
			for b.Loop() {
				in.Intercept(ctx, call) //nolint:errcheck // the decision is what is measured
			}
		})
	}
}

// Deciding with 100 policies that read no header allocates nothing.
func TestRBACDecisionAllocatesNothing(t *testing.T) {
	ca := certtest.NewCA(t, "ca")
	conn := tlsConn(t, ca, &certtest.Names{URIs: []string{"spiffe://td/ns/ns99/sa/client"}})
	e := httpfilter.ServerEnv{FilterName: "authz", Authz: func(httpfilter.AuthzDecision) {}}
	in := interceptor(t, rules(rbacconfigv3.RBAC_ALLOW, benchPolicies(100, false)), nil, e)
	ctx := metadata.NewIncomingContext(context.Background(), metadata.Pairs(":authority", "svc.example.com"))
	for _, method := range []string{"/svc99.Service/Get", "/svc100.Service/Get"} {
		call := httpfilter.ServerCall{Method: method, Conn: conn}
		if n := testing.AllocsPerRun(100, func() { in.Intercept(ctx, call) }); n != 0 { //nolint:errcheck // allocations are what is measured
			t.Errorf("%s: %v allocations per decision, want 0", method, n)
		}
	}
}
