package xdscreds_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/xdslens/xdslens/xdsclient/xdsresource/matcher"
	"github.com/xdslens/xdslens/xdsclient/xdsresource/security"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/xdslens/xdslens/internal/testing/certtest"
)

func exact(v string) matcher.String {
	return matcher.String{Kind: matcher.Exact, Value: v}
}

func match(kind matcher.Kind, v string, ignoreCase bool) matcher.String {
	return matcher.String{Kind: kind, Value: v, IgnoreCase: ignoreCase}
}

// TestSANMatching: each matcher kind, matching and not, against the SANs
// of a real server certificate (serverSANs), over a real handshake.
func TestSANMatching(t *testing.T) {
	_, store, b := rootsSetup(t)
	const spiffe = "spiffe://example.org/ns/prod/sa/server"
	tests := []struct {
		name     string
		matchers []matcher.String
		ok       bool
	}{
		{"no matchers: any verified server", nil, true},
		{"exact DNS", []matcher.String{exact("server.example.com")}, true},
		{"exact DNS compares without case", []matcher.String{exact("SERVER.Example.COM")}, true},
		{"exact DNS with a trailing dot", []matcher.String{exact("server.example.com.")}, true},
		{"exact DNS mismatch", []matcher.String{exact("other.example.com")}, false},
		{"exact DNS against a wildcard SAN", []matcher.String{exact("api.wild.example.com")}, true},
		{"a wildcard SAN stands for one label only", []matcher.String{exact("a.b.wild.example.com")}, false},
		{"a wildcard SAN stands for at least one label", []matcher.String{exact("wild.example.com")}, false},
		{"exact URI", []matcher.String{exact(spiffe)}, true},
		{"exact URI compares with case", []matcher.String{exact(strings.ToUpper(spiffe))}, false},
		{"exact URI with ignore_case", []matcher.String{match(matcher.Exact, strings.ToUpper(spiffe), true)}, true},
		{"exact IP", []matcher.String{exact("127.0.0.1")}, true},
		{"exact IP mismatch", []matcher.String{exact("127.0.0.2")}, false},
		{"prefix", []matcher.String{match(matcher.Prefix, "spiffe://example.org/", false)}, true},
		{"prefix mismatch", []matcher.String{match(matcher.Prefix, "spiffe://other.org/", false)}, false},
		{"prefix with ignore_case", []matcher.String{match(matcher.Prefix, "SPIFFE://EXAMPLE.ORG/", true)}, true},
		{"prefix without ignore_case", []matcher.String{match(matcher.Prefix, "SPIFFE://EXAMPLE.ORG/", false)}, false},
		{"suffix on a DNS SAN is a string match", []matcher.String{match(matcher.Suffix, ".example.com", false)}, true},
		{"suffix does not expand wildcards", []matcher.String{match(matcher.Suffix, "api.wild.example.com", false)}, false},
		{"suffix mismatch", []matcher.String{match(matcher.Suffix, "/sa/client", false)}, false},
		{"contains", []matcher.String{match(matcher.Contains, "/ns/prod/", false)}, true},
		{"contains mismatch", []matcher.String{match(matcher.Contains, "/ns/dev/", false)}, false},
		{"contains with ignore_case", []matcher.String{match(matcher.Contains, "/NS/PROD/", true)}, true},
		{"regex", []matcher.String{match(matcher.Regex, `spiffe://example\.org/ns/[^/]+/sa/server`, false)}, true},
		{"regex must match the whole SAN", []matcher.String{match(matcher.Regex, `sa/server`, false)}, false},
		{"regex on an IP SAN", []matcher.String{match(matcher.Regex, `127\.0\.0\.[0-9]+`, false)}, true},
		{"one of several matchers", []matcher.String{exact("nope"), match(matcher.Suffix, "/sa/nope", false), exact(spiffe)}, true},
		{"none of several matchers", []matcher.String{exact("nope"), match(matcher.Suffix, "/sa/nope", false)}, false},
		{"an empty exact matches nothing", []matcher.String{exact("")}, false},
		// As in C-core, an empty prefix, suffix or contains matches every
		// SAN, so any certificate with a SAN whose chain verifies.
		{"an empty prefix matches any SAN", []matcher.String{match(matcher.Prefix, "", false)}, true},
		{"an empty suffix matches any SAN", []matcher.String{match(matcher.Suffix, "", true)}, true},
		{"an empty contains matches any SAN", []matcher.String{exact("nope"), match(matcher.Contains, "", false)}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cc := dial(t, newCreds(t), b.addr, info(t, store, &security.Config{RootInstance: "roots", SANMatchers: tt.matchers}))
			err := check(t, cc)
			if tt.ok {
				if err != nil {
					t.Fatalf("RPC = %v, want OK", err)
				}
				return
			}
			wantHandshakeFailure(t, err, b, `no SAN of the server's certificate (URI ["`+spiffe+`"], IP ["127.0.0.1"], DNS ["server.example.com" "*.wild.example.com"]) matches match_subject_alt_names [`)
		})
	}
}

// TestSANMismatchErrorBounded: a certificate of many long SANs makes an
// error that lists a few of them and counts the rest.
func TestSANMismatchErrorBounded(t *testing.T) {
	p := newPKI(t, "ca")
	store := newStore(t, time.Hour, map[string]*certtest.Files{"roots": certtest.WriteFiles(t, nil, p.ca)})
	var names certtest.Names
	for i := range 500 {
		names.DNS = append(names.DNS, fmt.Sprintf("%s-%d.example.com", strings.Repeat("x", 60), i))
	}
	b := startTLS(t, backendConfig{cert: p.ca.Issue(t, names)})
	var matchers []matcher.String
	for i := range 100 {
		matchers = append(matchers, exact(fmt.Sprintf("want-%d.example.com", i)))
	}
	cc := dial(t, newCreds(t), b.addr, info(t, store, &security.Config{RootInstance: "roots", SANMatchers: matchers}))
	err := check(t, cc)
	wantHandshakeFailure(t, err, b, "and 492 more]) matches match_subject_alt_names [exact \"want-0.example.com\"")
	if msg := status.Convert(err).Message(); len(msg) > 4096 || !strings.Contains(msg, "and 92 more]") {
		t.Errorf("error of %d bytes (want at most 4096) counting the matchers not listed: %.300s...", len(msg), msg)
	}
}

// TestAutoSNISANValidation: with auto_sni_san_validation, a DNS SAN must
// match the server name sent, whatever match_subject_alt_names says; with
// no name sent, the handshake fails, as in C-core.
func TestAutoSNISANValidation(t *testing.T) {
	_, store, b := rootsSetup(t)
	tests := []struct {
		name   string
		sc     security.Config
		host   string
		reason string // "" for success
	}{
		{"sni matches a DNS SAN", security.Config{SNI: "server.example.com"}, "", ""},
		{"sni matches a wildcard DNS SAN", security.Config{SNI: "api.wild.example.com"}, "", ""},
		{"the SAN matchers are not applied", security.Config{SNI: "server.example.com", SANMatchers: []matcher.String{exact("nope")}}, "", ""},
		{"the hostname of auto_host_sni", security.Config{AutoHostSNI: true}, "api.wild.example.com:443", ""},
		{"sni matches no DNS SAN", security.Config{SNI: "other.example.com"}, "",
			`auto_sni_san_validation: no DNS SAN of the server's certificate matches the server name "other.example.com" (DNS SANs ["server.example.com" "*.wild.example.com"])`},
		{"only DNS SANs count", security.Config{SNI: "127.0.0.1"}, "", `matches the server name "127.0.0.1"`},
		{"no server name", security.Config{AutoHostSNI: true}, "",
			"auto_sni_san_validation: no server name was sent to check the certificate against"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sc := tt.sc
			sc.RootInstance, sc.AutoSNISANValidation = "roots", true
			in := info(t, store, &sc)
			in.Hostname = tt.host
			err := check(t, dial(t, newCreds(t), b.addr, in))
			if tt.reason == "" {
				if err != nil {
					t.Fatalf("RPC = %v, want OK", err)
				}
				return
			}
			if status.Code(err) != codes.Unavailable {
				t.Fatalf("RPC = %v, want UNAVAILABLE", err)
			}
			wantHandshakeFailure(t, err, b, tt.reason)
		})
	}
}
