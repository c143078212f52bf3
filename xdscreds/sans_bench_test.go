package xdscreds

import (
	"testing"

	"github.com/xdslens/xdslens/internal/certsan"
	"github.com/xdslens/xdslens/internal/handshake"
	"github.com/xdslens/xdslens/xdsclient/xdsresource/matcher"
	"github.com/xdslens/xdslens/xdsclient/xdsresource/security"
)

// BenchmarkCheckSANs decides the SANs of a mesh certificate against the
// match_subject_alt_names of a cluster, as each handshake does once its
// chain verifies, with the matchers the cluster policy compiled when it
// took the cluster's config: the last matcher, which ignores case, is the
// one that matches, so that every matcher is tried on every SAN.
func BenchmarkCheckSANs(b *testing.B) {
	s := certsan.SANs{
		DNS: []string{"server.prod.svc.cluster.local", "*.wild.example.com"},
		URI: []string{"spiffe://example.org/ns/prod/sa/server"},
		IP:  []string{"10.1.2.3"},
	}
	settings, err := handshake.NewSettings(&security.Config{SANMatchers: []matcher.String{
		{Kind: matcher.Exact, Value: "spiffe://example.org/ns/dev/sa/server"},
		{Kind: matcher.Regex, Value: `spiffe://example\.org/ns/staging/sa/[a-z-]+`},
		{Kind: matcher.Suffix, Value: ".dev.svc.cluster.local"},
		{Kind: matcher.Prefix, Value: "SPIFFE://EXAMPLE.ORG/NS/PROD/", IgnoreCase: true},
	}})
	if err != nil {
		b.Fatal(err)
	}
	v := &verifier{sc: settings.Security(), sans: settings.SANs()}
	b.ReportAllocs()
	for b.Loop() {
		if err := v.sans.Check(s); err != nil {
			b.Fatal(err)
		}
	}
}
