package httpfilter_test

import (
	"crypto/tls"
	"net/netip"
	"slices"
	"strings"
	"testing"

	routerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/xdslens/xdslens/httpfilter"
	"github.com/xdslens/xdslens/internal/testing/certtest"
)

func toAny(t *testing.T, m proto.Message) *anypb.Any {
	t.Helper()
	a, err := anypb.New(m)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// countFilter is a filter registered under the type URLs it is given.
type countFilter struct{ urls []string }

func (f countFilter) TypeURLs() []string { return f.urls }
func (countFilter) ParseConfig(*anypb.Any) (httpfilter.Config, error) {
	return "config", nil
}
func (countFilter) ParseOverride(*anypb.Any) (httpfilter.Config, error) {
	return "override", nil
}

func TestRegisterAndGet(t *testing.T) {
	const a, b = "type.googleapis.com/test.RegisterA", "type.googleapis.com/test.RegisterB"
	if f := httpfilter.Get(a); f != nil {
		t.Fatalf("Get(%q) before Register = %T, want nil", a, f)
	}
	first := countFilter{urls: []string{a, b}}
	httpfilter.Register(first)
	for _, u := range []string{a, b} {
		if got := httpfilter.Get(u); !slices.Equal(got.TypeURLs(), first.urls) {
			t.Errorf("Get(%q) = %v, want the filter registered under it", u, got)
		}
	}
	// A later registration replaces the filter for its URLs alone.
	second := countFilter{urls: []string{b}}
	httpfilter.Register(second)
	if got := httpfilter.Get(b); !slices.Equal(got.TypeURLs(), second.urls) {
		t.Errorf("Get(%q) after a second Register = %v, want the second filter", b, got)
	}
	if got := httpfilter.Get(a); !slices.Equal(got.TypeURLs(), first.urls) {
		t.Errorf("Get(%q) after a second Register = %v, want the first filter still", a, got)
	}
}

func TestRegisterPanicsWithoutTypeURL(t *testing.T) {
	for _, urls := range [][]string{nil, {"type.googleapis.com/test.Ok", ""}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Register with type URLs %q did not panic", urls)
				}
			}()
			httpfilter.Register(countFilter{urls: urls})
		}()
	}
}

func TestRouter(t *testing.T) {
	f := httpfilter.Get(httpfilter.RouterTypeURL)
	sf, ok := f.(httpfilter.ServerFilter)
	if !ok {
		t.Fatalf("the router is %T, not a ServerFilter", f)
	}
	cfg, err := f.ParseConfig(toAny(t, &routerv3.Router{}))
	if err != nil {
		t.Fatalf("ParseConfig(Router) = %v", err)
	}
	if _, err := f.ParseConfig(toAny(t, wrapperspb.String("x"))); err == nil || !strings.Contains(err.Error(), "google.protobuf.StringValue") {
		t.Errorf("ParseConfig(StringValue) = %v, want an error naming the type", err)
	}
	bad := toAny(t, &routerv3.Router{})
	bad.Value = []byte{0xff}
	if _, err := f.ParseConfig(bad); err == nil {
		t.Error("ParseConfig of garbage bytes succeeded")
	}
	if _, err := f.ParseOverride(toAny(t, &routerv3.Router{})); err == nil {
		t.Error("ParseOverride succeeded, want an error: the router takes no override")
	}
	in, err := sf.BuildServerInterceptor(cfg, nil, httpfilter.ServerEnv{FilterName: "router"})
	if err != nil || in != nil {
		t.Errorf("BuildServerInterceptor = %v, %v; want nil, nil: the router runs nothing", in, err)
	}
}

func TestNewConnPrincipals(t *testing.T) {
	ca := certtest.NewCA(t, "ca")
	local := netip.MustParseAddrPort("[::ffff:10.0.0.1]:443")
	remote := netip.MustParseAddrPort("10.0.0.2:5000")
	tests := []struct {
		name      string
		names     *certtest.Names
		noTLS     bool
		want      []string
		wantSPIFF string
	}{
		{name: "plaintext", noTLS: true},
		{name: "no client certificate", want: []string{""}},
		{
			name:      "URI SANs first, DNS ignored",
			names:     &certtest.Names{CommonName: "cn", DNS: []string{"a.example.com"}, URIs: []string{"spiffe://td/ns/a", "https://b"}},
			want:      []string{"spiffe://td/ns/a", "https://b"},
			wantSPIFF: "", // two URI SANs: no SPIFFE ID
		},
		{
			name:      "one SPIFFE URI",
			names:     &certtest.Names{URIs: []string{"spiffe://td/ns/a/sa/b"}},
			want:      []string{"spiffe://td/ns/a/sa/b"},
			wantSPIFF: "spiffe://td/ns/a/sa/b",
		},
		{
			name:  "DNS SANs when no URI",
			names: &certtest.Names{CommonName: "cn", DNS: []string{"a.example.com", "b.example.com"}, IPs: []string{"10.0.0.2"}},
			want:  []string{"a.example.com", "b.example.com"},
		},
		{
			name:  "subject when no URI or DNS SAN",
			names: &certtest.Names{CommonName: "client", Organization: "acme", IPs: []string{"10.0.0.2"}},
			want:  []string{"CN=client,O=acme"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var st *tls.ConnectionState
			if !tc.noTLS {
				st = &tls.ConnectionState{}
				if tc.names != nil {
					st.PeerCertificates = append(st.PeerCertificates, ca.Issue(t, *tc.names).Cert)
				}
			}
			c := httpfilter.NewConn(local, remote, st)
			if c.Local != netip.MustParseAddrPort("10.0.0.1:443") || c.Remote != remote {
				t.Errorf("addresses = %v, %v; want the IPv4-mapped one unmapped", c.Local, c.Remote)
			}
			if !slices.Equal(c.PeerPrincipals, tc.want) {
				t.Errorf("PeerPrincipals = %q, want %q", c.PeerPrincipals, tc.want)
			}
			if c.SPIFFEID != tc.wantSPIFF {
				t.Errorf("SPIFFEID = %q, want %q", c.SPIFFEID, tc.wantSPIFF)
			}
		})
	}
}
