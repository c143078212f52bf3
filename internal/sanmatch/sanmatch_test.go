package sanmatch_test

import (
	"strings"
	"testing"

	"github.com/xdslens/xdslens/internal/certsan"
	"github.com/xdslens/xdslens/internal/sanmatch"
	"github.com/xdslens/xdslens/xdsclient/xdsresource/matcher"
)

var mesh = certsan.SANs{
	DNS: []string{"api.prod.svc", "*.wild.example.com"},
	URI: []string{"spiffe://example.org/ns/prod/sa/api"},
	IP:  []string{"10.0.0.7"},
}

func compile(t *testing.T, ms ...matcher.String) *sanmatch.Matchers {
	t.Helper()
	m, err := sanmatch.Compile(ms)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestCheck: no matcher accepts every certificate; one matching SAN of
// any kind is enough; a mismatch lists the SANs and the matchers.
func TestCheck(t *testing.T) {
	if err := compile(t).Check(mesh); err != nil {
		t.Errorf("no matchers: %v, want nil", err)
	}
	if err := new(sanmatch.Matchers).Check(certsan.SANs{}); err != nil {
		t.Errorf("the zero Matchers: %v, want nil", err)
	}
	for _, m := range []matcher.String{
		{Kind: matcher.Exact, Value: "API.prod.svc."}, // DNS rules
		{Kind: matcher.Exact, Value: "x.wild.example.com"},
		{Kind: matcher.Regex, Value: `spiffe://example\.org/ns/[a-z]+/sa/api`},
		{Kind: matcher.Prefix, Value: "10.0."},
	} {
		if err := compile(t, matcher.String{Kind: matcher.Exact, Value: "nope"}, m).Check(mesh); err != nil {
			t.Errorf("%v %q: %v, want a match", m.Kind, m.Value, err)
		}
	}
	err := compile(t, matcher.String{Kind: matcher.Regex, Value: `spiffe://.*/sa/db`}).Check(mesh)
	const want = `no SAN of the server's certificate (URI ["spiffe://example.org/ns/prod/sa/api"], IP ["10.0.0.7"], DNS ["api.prod.svc" "*.wild.example.com"]) matches match_subject_alt_names [safe_regex "spiffe://.*/sa/db"]`
	if err == nil || err.Error() != want {
		t.Errorf("mismatch: %v\nwant %s", err, want)
	}
}

// TestCompileFails: what package security NACKs is refused here too,
// naming the matcher, should it ever get this far.
func TestCompileFails(t *testing.T) {
	for _, tc := range []struct {
		m    matcher.String
		want string
	}{
		{matcher.String{Kind: matcher.Regex, Value: "("}, `match_subject_alt_names[1]: safe_regex "(": invalid regex`},
		{matcher.String{Kind: matcher.Regex, Value: "a)|(b"}, `match_subject_alt_names[1]: safe_regex "a)|(b": invalid regex`},
		{matcher.String{Kind: matcher.Present}, `match_subject_alt_names[1]: present "": present is not a string match`},
	} {
		_, err := sanmatch.Compile([]matcher.String{{Kind: matcher.Exact, Value: "ok"}, tc.m})
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("Compile(%v %q) = %v, want an error starting %q", tc.m.Kind, tc.m.Value, err, tc.want)
		}
	}
}

// TestCheckServerName: auto_sni_san_validation matches DNS SANs only, by
// the DNS rules.
func TestCheckServerName(t *testing.T) {
	for _, name := range []string{"api.prod.svc", "API.PROD.SVC.", "x.wild.example.com"} {
		if err := sanmatch.CheckServerName(mesh, name); err != nil {
			t.Errorf("%q: %v, want a match", name, err)
		}
	}
	for _, name := range []string{"", "10.0.0.7", "spiffe://example.org/ns/prod/sa/api", "a.b.wild.example.com"} {
		if err := sanmatch.CheckServerName(mesh, name); err == nil || !strings.Contains(err.Error(), "auto_sni_san_validation: no DNS SAN") {
			t.Errorf("%q: %v, want no match", name, err)
		}
	}
}
