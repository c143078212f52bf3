package xdstp

import (
	"strings"
	"testing"
)

const cds = "xdstp://auth/envoy.config.cluster.v3.Cluster/"

func TestCanonical(t *testing.T) {
	tests := []struct{ in, want string }{
		{"old-style?b=1&a=2", "old-style?b=1&a=2"},
		{cds + "x", cds + "x"},
		{cds + "x?b=2&a=1", cds + "x?a=1&b=2"},
		{cds + "x?&", cds + "x"},
		{cds + "x?", cds + "x"},
		{cds + "x?&&a=1&", cds + "x?a=1"},
		{cds + "x?a=2&a=1", cds + "x?a=1&a=2"},
		{cds + "x?flag", cds + "x?flag="},
		{cds + "x#entry=foo", cds + "x"},
		{cds + "x?b=1#d?=&", cds + "x?b=1"},
		{cds + "a/b/c", cds + "a/b/c"},
		{cds, cds},
		{"xdstp:///envoy.config.cluster.v3.Cluster/x", "xdstp:///envoy.config.cluster.v3.Cluster/x"},
		{"xdstp://a%62c/envoy.config.cluster.v3.Cluster/%78", "xdstp://abc/envoy.config.cluster.v3.Cluster/x"},
		{"xdstp://a%2fc/envoy.config.cluster.v3.Cluster/x%2fy", "xdstp://a%2Fc/envoy.config.cluster.v3.Cluster/x/y"},
		{cds + "x%20y", cds + "x%20y"},
		{cds + "x y", cds + "x%20y"},
		{cds + "x?k%3D=v%26w", cds + "x?k%3D=v%26w"},
		{cds + "x?a=b+c", cds + "x?a=b+c"},
		{cds + "x?a=%2B", cds + "x?a=+"},
		{"xdstp://[::1]:80/envoy.config.cluster.v3.Cluster/x", "xdstp://[::1]:80/envoy.config.cluster.v3.Cluster/x"},
	}
	for _, tt := range tests {
		got, err := Canonical(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("Canonical(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
			continue
		}
		if again, err := Canonical(got); err != nil || again != got {
			t.Errorf("Canonical(%q) = %q, %v; not idempotent", got, again, err)
		}
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct{ in, want string }{
		{"xdstp:auth/envoy.config.cluster.v3.Cluster/x", `starts with "xdstp:" but not with "xdstp://"`},
		{"xdstp://auth", "no resource type"},
		{"xdstp://auth?a=b/c", "no resource type"},
		{"xdstp://auth/envoy.config.cluster.v3.Cluster", "the path must be TYPE/ID"},
		{"xdstp://auth//x", "the path must be TYPE/ID"},
		{"xdstp://a%zz/T/x", `authority: bad percent-encoding "%zz"`},
		{"xdstp://a/T/x%4", `path: bad percent-encoding "%4"`},
		{cds + "x?a=%", `context parameter "a=%": bad percent-encoding "%"`},
	}
	for _, tt := range tests {
		_, err := Parse(tt.in)
		if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), tt.in) {
			t.Errorf("Parse(%q) error = %v; want one naming the name and saying %q", tt.in, err, tt.want)
		}
		if _, cerr := Canonical(tt.in); cerr == nil {
			t.Errorf("Canonical(%q) gave no error", tt.in)
		}
	}
}

func TestParse(t *testing.T) {
	n, err := Parse("xdstp://my%20auth/envoy.config.listener.v3.Listener/grpc/server?xds.resource.listening_address=127.0.0.1%3A8443&b=2")
	if err != nil {
		t.Fatal(err)
	}
	want := Name{Authority: "my auth", Type: "envoy.config.listener.v3.Listener", ID: "grpc/server",
		Params: []Param{{"b", "2"}, {"xds.resource.listening_address", "127.0.0.1:8443"}}}
	if n.Authority != want.Authority || n.Type != want.Type || n.ID != want.ID || len(n.Params) != 2 || n.Params[0] != want.Params[0] || n.Params[1] != want.Params[1] {
		t.Errorf("Parse = %+v, want %+v", n, want)
	}
	if got := n.String(); got != "xdstp://my%20auth/envoy.config.listener.v3.Listener/grpc/server?b=2&xds.resource.listening_address=127.0.0.1:8443" {
		t.Errorf("String() = %q", got)
	}
}

func TestIsCanonical(t *testing.T) {
	for name, want := range map[string]bool{
		"plain":          true,
		"xdstp:x":        false,
		cds + "x":        true,
		cds:              true,
		cds + "x?a=1":    false,
		cds + "x#d":      false,
		cds + "x%20":     false,
		cds + "x y":      false,
		"xdstp://a//x":   false,
		"xdstp://a/T":    false,
		"xdstp://a b/T/": false,
	} {
		if got := IsCanonical(name); got != want {
			t.Errorf("IsCanonical(%q) = %v, want %v", name, got, want)
		}
		if got := IsCanonical([]byte(name)); got != want {
			t.Errorf("IsCanonical([]byte(%q)) = %v, want %v", name, got, want)
		}
	}
}

func TestIsCanonicalAllocatesNothing(t *testing.T) {
	name := []byte(cds + "some-cluster-name")
	if n := testing.AllocsPerRun(100, func() { IsCanonical(name) }); n != 0 {
		t.Errorf("IsCanonical allocates %v times", n)
	}
}

func TestPercentEncode(t *testing.T) {
	tests := []struct {
		in, path, authority string
	}{
		{"abcXYZ019-._~", "abcXYZ019-._~", "abcXYZ019-._~"},
		{"!$&'()*+,;=", "!$&'()*+,;=", "!$&'()*+,;="},
		{"a/b:c@d", "a/b:c@d", "a%2Fb:c@d"},
		{"[::1]", "%5B::1%5D", "[::1]"},
		{"a b%?#\"<>\\^`{|}", "a%20b%25%3F%23%22%3C%3E%5C%5E%60%7B%7C%7D", "a%20b%25%3F%23%22%3C%3E%5C%5E%60%7B%7C%7D"},
		{"é", "%C3%A9", "%C3%A9"},
		{"\x00\x7f", "%00%7F", "%00%7F"},
		{"", "", ""},
	}
	for _, tt := range tests {
		if got := EscapePath(tt.in); got != tt.path {
			t.Errorf("EscapePath(%q) = %q, want %q", tt.in, got, tt.path)
		}
		if got := EscapeAuthority(tt.in); got != tt.authority {
			t.Errorf("EscapeAuthority(%q) = %q, want %q", tt.in, got, tt.authority)
		}
	}
}

// FuzzCanonical checks the properties the client relies on: canonical
// names are fixed points, IsCanonical never claims a name canonical that
// Canonical would change, and a parsed name survives String and Parse.
func FuzzCanonical(f *testing.F) {
	for _, s := range []string{
		cds + "x?&", cds + "x?b=2&a=1", cds + "x#d", "xdstp://a%2F/T/%41?%3D=%26",
		"xdstp:///envoy.config.listener.v3.Listener/grpc/server?xds.resource.listening_address=%5B::%5D:8080",
		"old-style-name", "xdstp:", "xdstp://", "xdstp://a/T/", "xdstp://a/T/x?a&a=&=a",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		c, err := Canonical(name)
		if IsCanonical(name) && (err != nil || c != name) {
			t.Fatalf("IsCanonical(%q) but Canonical = %q, %v", name, c, err)
		}
		if err != nil {
			if !Is(name) {
				t.Fatalf("old-style name %q: %v", name, err)
			}
			return
		}
		again, err := Canonical(c)
		if err != nil || again != c {
			t.Fatalf("Canonical(%q) = %q; Canonical of that = %q, %v", name, c, again, err)
		}
		if !Is(name) {
			if c != name {
				t.Fatalf("old-style name %q changed to %q", name, c)
			}
			return
		}
		n1, _ := Parse(name)
		n2, err := Parse(c)
		if err != nil || n1.String() != n2.String() || n1.Authority != n2.Authority || n1.Type != n2.Type || n1.ID != n2.ID || len(n1.Params) != len(n2.Params) {
			t.Fatalf("Parse(%q) = %+v, Parse(%q) = %+v, %v", name, n1, c, n2, err)
		}
		if a, err := Authority(c); err != nil || a != n1.Authority {
			t.Fatalf("Authority(%q) = %q, %v; want %q", c, a, err, n1.Authority)
		}
	})
}

// Received puts a name a server sent in canonical form, and keeps one it
// cannot parse as it is.
func TestReceived(t *testing.T) {
	for in, want := range map[string]string{
		"c1": "c1",
		"xdstp://a/envoy.config.cluster.v3.Cluster/c?b=2&a=1": "xdstp://a/envoy.config.cluster.v3.Cluster/c?a=1&b=2",
		"xdstp://a/envoy.config.cluster.v3.Cluster/c":         "xdstp://a/envoy.config.cluster.v3.Cluster/c",
		"xdstp:bad": "xdstp:bad",
	} {
		if got := Received(in); got != want {
			t.Errorf("Received(%q) = %q, want %q", in, got, want)
		}
	}
}
