package bootstrap_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/xdslens/xdslens/xdsclient/bootstrap"
)

// The forms of server_uri that carry a credential: each is shown with its
// scheme, host, port and path, and nothing of the secret.
func TestShowURIHidesCredentials(t *testing.T) {
	for _, tc := range []struct{ uri, want string }{
		// Nothing to hide: shown as written.
		{"xds.example.com:443", "xds.example.com:443"},
		{"dns:///xds.example.com:443", "dns:///xds.example.com:443"},
		{"dns://8.8.8.8/xds.example.com:443", "dns://8.8.8.8/xds.example.com:443"},
		{"unix:///var/run/xds.sock", "unix:///var/run/xds.sock"},
		{"unix:relative/xds.sock", "unix:relative/xds.sock"},
		{"[::1]:443", "[::1]:443"},
		{"passthrough:///127.0.0.1:443", "passthrough:///127.0.0.1:443"},
		// User info in the endpoint (the path), in the authority, both.
		{"dns:///user:s3cret@host:443", "dns:///[redacted]@host:443"},
		{"passthrough://user:s3cret@/127.0.0.1:443", "passthrough://[redacted]@/127.0.0.1:443"},
		{"passthrough://user:s3cret@host:443", "passthrough://[redacted]@host:443"},
		{"dns://user:s3cret@8.8.8.8/host:443", "dns://[redacted]@8.8.8.8/host:443"},
		{"dns://a:s3cret@8.8.8.8/b:s3cret@host:443", "dns://[redacted]@8.8.8.8/[redacted]@host:443"},
		// The last "@" ends the user info, "%40" is an "@".
		{"dns:///user:s3c@ret@host:443", "dns:///[redacted]@host:443"},
		{"dns:///user:s3cret%40host:443", "dns:///[redacted]@host:443"},
		{"passthrough://user%40s3cret@/h:1", "passthrough://[redacted]@/h:1"},
		// Query and fragment, whole.
		{"dns:///host:443?token=s3cret", "dns:///host:443?[redacted]"},
		{"dns:///host:443?token=s3cret&b=1#s3cret", "dns:///host:443?[redacted]#[redacted]"},
		{"dns:///host:443#s3cret?token=s3cret", "dns:///host:443#[redacted]"},
		{"dns:///host:443?", "dns:///host:443?[redacted]"},
		{"dns:///user:s3cret@host:443?token=s3cret", "dns:///[redacted]@host:443?[redacted]"},
		// No "//": everything before the last "@".
		{"user:s3cret@host:443", "[redacted]@host:443"},
		{"dns:user:s3cret@host:443", "[redacted]@host:443"},
		{"s3cret@host", "[redacted]@host"},
		// A "scheme" that is not one is a target without "//".
		{"user:s3cret@host://x", "[redacted]@host://x"},
		{"a@s3cret://c@host/p", "[redacted]@host/p"},
	} {
		got := bootstrap.ShowURI(tc.uri)
		if got != tc.want {
			t.Errorf("ShowURI(%q) = %q, want %q", tc.uri, got, tc.want)
		}
		if strings.Contains(got, "s3c") {
			t.Errorf("ShowURI(%q) = %q shows the secret", tc.uri, got)
		}
		if again := bootstrap.ShowURI(got); again != got {
			t.Errorf("ShowURI(%q) = %q, shown again %q", tc.uri, got, again)
		}
		if s := (&bootstrap.ServerConfig{URI: tc.uri}); s.ShownURI() != got {
			t.Errorf("ShownURI of %q = %q, ShowURI %q", tc.uri, s.ShownURI(), got)
		}
	}
}

// A long URI is cut, the query and fragment markers kept whole, and the
// cut form is stable.
func TestShowURIBounded(t *testing.T) {
	uri := "dns:///" + strings.Repeat("h", 3<<20) + ":443?token=s3cret#s3cret"
	got := bootstrap.ShowURI(uri)
	if len(got) > bootstrap.MaxShownURI || !strings.HasSuffix(got, " more bytes]?[redacted]#[redacted]") || !strings.HasPrefix(got, "dns:///hhh") {
		t.Fatalf("ShowURI of a 3 MiB URI: %d bytes, %q...%q", len(got), got[:20], got[len(got)-60:])
	}
	if again := bootstrap.ShowURI(got); again != got {
		t.Fatalf("a cut URI shown again changed: %q", again[len(again)-60:])
	}
}

// Redact hides, in text such as a gRPC channel's errors, the URI and every
// secret part of it, as written and decoded.
func TestRedact(t *testing.T) {
	s := &bootstrap.ServerConfig{URI: "dns:///us%65r:s3cret@host:443?tok%65n=s3cret#fr%61g"}
	for _, text := range []string{
		`invalid target address dns:///us%65r:s3cret@host:443?tok%65n=s3cret#fr%61g`,
		`dns resolver: address user:s3cret@host:443: too many colons in address`,
		`lookup user:s3cret@host: no such host`,
		`query token=s3cret, or tok%65n=s3cret`,
		`fragment frag or fr%61g`,
	} {
		got := s.Redact(text)
		for _, secret := range []string{"s3c", "user", "us%65r", "token", "tok%65n", "frag", "fr%61g"} {
			if strings.Contains(got, secret) {
				t.Errorf("Redact(%q) = %q shows %q", text, got, secret)
			}
		}
	}
	if got := s.Redact("xDS server " + s.URI + " failed"); got != "xDS server "+s.ShownURI()+" failed" {
		t.Errorf("the URI in a text is not replaced by its shown form: %q", got)
	}
	plain := &bootstrap.ServerConfig{URI: "dns:///host:443"}
	if got := plain.Redact("dns:///host:443 failed"); got != "dns:///host:443 failed" {
		t.Errorf("a URI with nothing to hide changed a text: %q", got)
	}
}

// fuzzSecret is what FuzzShowURI puts where credentials go.
const fuzzSecret = "Zx9secretQ"

// FuzzShowURI checks ShowURI on arbitrary targets: bounded, idempotent, a
// target with nothing to hide unchanged, every "@" after the marker and
// the query and fragment markers alone; and, with a secret put in each
// place a credential goes, that neither ShowURI nor Redact of the URI and
// of its decoded endpoint shows it.
func FuzzShowURI(f *testing.F) {
	for _, uri := range []string{
		"xds.example.com:443", "dns:///host:443", "dns://8.8.8.8/h:1", "unix:///a/b",
		"passthrough://u:p@/h:1?q#f", "dns:u@h", "a@b://c@d", "%40%40@", "?#?#", "://@",
	} {
		f.Add(uri)
	}
	f.Fuzz(func(t *testing.T, uri string) {
		got := bootstrap.ShowURI(uri)
		if len(got) > bootstrap.MaxShownURI {
			t.Fatalf("ShowURI(%q): %d bytes", uri, len(got))
		}
		if again := bootstrap.ShowURI(got); again != got {
			t.Fatalf("ShowURI(%q) = %q, shown again %q", uri, got, again)
		}
		if !strings.ContainsAny(uri, "@?#") && !strings.Contains(uri, "%40") && len(uri) <= bootstrap.MaxShownURI && got != uri {
			t.Fatalf("ShowURI(%q) = %q: nothing to hide, yet changed", uri, got)
		}
		if strings.Contains(got, "%40") || strings.Count(got, "@") != strings.Count(got, bootstrap.Redacted+"@") {
			t.Fatalf("ShowURI(%q) = %q: an \"@\" not after the marker", uri, got)
		}
		if i := strings.IndexAny(got, "?#"); i >= 0 {
			switch got[i:] {
			case "?[redacted]", "#[redacted]", "?[redacted]#[redacted]":
			default:
				t.Fatalf("ShowURI(%q) = %q: query or fragment %q shown", uri, got, got[i:])
			}
		}
		if strings.Contains(uri, fuzzSecret) || len(uri) > bootstrap.MaxShownURI/2 {
			return
		}
		for _, hostile := range []string{
			"passthrough://" + fuzzSecret + "@" + uri,
			"dns:///" + fuzzSecret + "@" + uri,
			"dns:///user:" + fuzzSecret + "%40" + uri,
			fuzzSecret + "@" + uri,
			uri + "?" + fuzzSecret,
			uri + "#" + fuzzSecret,
		} {
			s := &bootstrap.ServerConfig{URI: hostile}
			shown := s.ShownURI()
			if strings.Contains(shown, fuzzSecret) {
				t.Fatalf("ShowURI(%q) = %q shows the secret", hostile, shown)
			}
			texts := []string{hostile, "dial " + hostile + ": failed"}
			if u, err := url.Parse(hostile); err == nil {
				// What gRPC's resolvers and errors quote of a parsed
				// target: its endpoint, query and fragment.
				texts = append(texts, u.Path, strings.TrimPrefix(u.Path, "/"), u.EscapedPath(), u.Opaque, u.RawQuery, u.Fragment, u.EscapedFragment())
			}
			for _, text := range texts {
				if r := s.Redact(text); strings.Contains(r, fuzzSecret) {
					t.Fatalf("URI %q: Redact(%q) = %q shows the secret", hostile, text, r)
				}
			}
		}
	})
}
