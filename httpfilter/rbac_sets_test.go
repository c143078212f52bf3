package httpfilter_test

import (
	"crypto/tls"
	"crypto/x509"
	"slices"
	"strings"
	"testing"

	rbacconfigv3 "github.com/envoyproxy/go-control-plane/envoy/config/rbac/v3"

	"github.com/xdslens/xdslens/httpfilter"
	"github.com/xdslens/xdslens/internal/testing/certtest"
)

// TestRBACEmptySets: what empty lists decide, as gRPC C-core: a policy
// without permissions or principals matches nothing; rules present with
// no policy deny everything under ALLOW and nothing under DENY (where
// rules absent enforce nothing, TestRBACNotEnforced); any: false is any.
func TestRBACEmptySets(t *testing.T) {
	anyFalse := &rbacconfigv3.Permission{Rule: &rbacconfigv3.Permission_Any{Any: false}}
	anyFalseID := &rbacconfigv3.Principal{Identifier: &rbacconfigv3.Principal_Any{Any: false}}
	for _, tc := range []struct {
		name     string
		action   rbacconfigv3.RBAC_Action
		policies map[string]*rbacconfigv3.Policy
		allowed  bool
	}{
		{"ALLOW without policies", rbacconfigv3.RBAC_ALLOW, nil, false},
		{"DENY without policies", rbacconfigv3.RBAC_DENY, nil, true},
		{"ALLOW, a policy without permissions", rbacconfigv3.RBAC_ALLOW, map[string]*rbacconfigv3.Policy{"p": {Principals: ids(anyID)}}, false},
		{"ALLOW, a policy without principals", rbacconfigv3.RBAC_ALLOW, map[string]*rbacconfigv3.Policy{"p": {Permissions: perms(anyPerm)}}, false},
		{"DENY, a policy without principals", rbacconfigv3.RBAC_DENY, map[string]*rbacconfigv3.Policy{"p": {Permissions: perms(anyPerm)}}, true},
		{"ALLOW, empty and_ids", rbacconfigv3.RBAC_ALLOW, map[string]*rbacconfigv3.Policy{"p": {Permissions: perms(anyPerm), Principals: ids(andIDs())}}, true},
		{"ALLOW, empty or_ids", rbacconfigv3.RBAC_ALLOW, map[string]*rbacconfigv3.Policy{"p": {Permissions: perms(anyPerm), Principals: ids(orIDs())}}, false},
		{"ALLOW, any: false", rbacconfigv3.RBAC_ALLOW, map[string]*rbacconfigv3.Policy{"p": {Permissions: perms(anyFalse), Principals: ids(anyFalseID)}}, true},
		{"DENY, not_rule of any: false", rbacconfigv3.RBAC_DENY, map[string]*rbacconfigv3.Policy{"p": {Permissions: perms(notPerm(anyFalse)), Principals: ids(anyID)}}, true},
	} {
		in := interceptor(t, rules(tc.action, tc.policies), nil, httpfilter.ServerEnv{})
		if in == nil {
			t.Errorf("%s: nothing enforced, want rules enforced", tc.name)
			continue
		}
		if got := allowed(t, in, defaultRPC()); got != tc.allowed {
			t.Errorf("%s: allowed = %v, want %v", tc.name, got, tc.allowed)
		}
	}
}

// TestSPIFFEID: a connection's SPIFFE ID (an audit event's principal, and
// an xDS-enabled server's TLSInfo.SPIFFEID) is the certificate's only URI
// SAN when it is a SPIFFE ID as gRPC C-core takes one (package certsan,
// whose table has every rule), read as the certificate spells it.
func TestSPIFFEID(t *testing.T) {
	ca := certtest.NewCA(t, "ca")
	long := "spiffe://td/" + strings.Repeat("a", 2048)
	for _, tc := range []struct {
		uris []string
		want string
	}{
		{[]string{"spiffe://td/ns/a/sa/b"}, "spiffe://td/ns/a/sa/b"},
		{[]string{"spiffe://td/ns/a/sa/b", "https://td/x"}, ""}, // not the only URI SAN
		{[]string{"spiffe://td"}, ""},                           // no workload path
		{[]string{"spiffe://td/"}, ""},
		{[]string{"spiffe://" + strings.Repeat("d", 256) + "/x"}, ""}, // a trust domain over 255 bytes
		{[]string{long}, ""},                                          // over 2048 bytes
		{[]string{"https://td/ns/a"}, ""},
	} {
		c := tlsConn(t, ca, &certtest.Names{URIs: tc.uris})
		if c.SPIFFEID != tc.want {
			t.Errorf("URI SANs %.60q: SPIFFE ID %.60q, want %q", tc.uris, c.SPIFFEID, tc.want)
		}
	}
	for uri, want := range map[string]string{
		"SPIFFE://td/ns/a": "",                // C-core compares the scheme with case
		"spiffe://td/a b":  "spiffe://td/a b", // as written, not re-encoded as %20
	} {
		st := &tls.ConnectionState{PeerCertificates: []*x509.Certificate{certtest.SelfSigned(t, certtest.URISANs(uri)...)}}
		c := httpfilter.NewConn(serverAddr, peerAddr, st)
		if c.SPIFFEID != want {
			t.Errorf("URI SAN %q as written: SPIFFE ID %q, want %q", uri, c.SPIFFEID, want)
		}
		// The principal names too are the SANs as written, as C-core
		// matches them.
		if !slices.Equal(c.PeerPrincipals, []string{uri}) {
			t.Errorf("URI SAN %q as written: principal names %q, want it as written", uri, c.PeerPrincipals)
		}
	}
}
