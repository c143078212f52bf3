package bootstrap

import (
	"slices"
	"testing"
)

// federationDoc has top-level servers, an authority with its own servers,
// one without, and the empty authority with its own servers.
const federationDoc = `{
	"xds_servers": [
		{"server_uri": "top-primary:443", "channel_creds": [{"type": "insecure"}]},
		{"server_uri": "top-fallback:443", "channel_creds": [{"type": "insecure"}]}
	],
	"authorities": {
		"xds.example.com": {"xds_servers": [
			{"server_uri": "ex-primary:443", "channel_creds": [{"type": "insecure"}]},
			{"server_uri": "ex-fallback:443", "channel_creds": [{"type": "insecure"}]}
		]},
		"uses-top.example.com": {},
		"": {"xds_servers": [{"server_uri": "empty-authority:443", "channel_creds": [{"type": "insecure"}]}]},
		"a b": {"xds_servers": [{"server_uri": "spaced:443", "channel_creds": [{"type": "insecure"}]}]}
	},
	"client_default_listener_resource_name_template": "%s",
	"server_listener_resource_name_template": "xdstp://xds.example.com/envoy.config.listener.v3.Listener/grpc/server/%s"
}`

func mustParse(t *testing.T, doc string) *Config {
	t.Helper()
	c, err := Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func uris(servers []*ServerConfig) []string {
	var out []string
	for _, s := range servers {
		out = append(out, s.String())
	}
	return out
}

func TestServersFor(t *testing.T) {
	c := mustParse(t, federationDoc)
	tests := []struct {
		name     string
		resource string
		want     []string
		wantErr  string
	}{
		{"old-style name", "listener.example.com:443", []string{"top-primary:443", "top-fallback:443"}, ""},
		{"old-style name that looks like a URI", "xds://xds.example.com/foo", []string{"top-primary:443", "top-fallback:443"}, ""},
		{"empty name", "", []string{"top-primary:443", "top-fallback:443"}, ""},
		{"authority with servers", "xdstp://xds.example.com/envoy.config.listener.v3.Listener/foo",
			[]string{"ex-primary:443", "ex-fallback:443"}, ""},
		{"authority with servers, query and fragment", "xdstp://xds.example.com/envoy.config.cluster.v3.Cluster/a/b?z=1&a=2#frag",
			[]string{"ex-primary:443", "ex-fallback:443"}, ""},
		{"authority without servers uses top level", "xdstp://uses-top.example.com/envoy.config.cluster.v3.Cluster/c1",
			[]string{"top-primary:443", "top-fallback:443"}, ""},
		{"empty authority", "xdstp:///envoy.config.listener.v3.Listener/foo", []string{"empty-authority:443"}, ""},
		{"percent-encoded authority", "xdstp://a%20b/envoy.config.listener.v3.Listener/foo", []string{"spaced:443"}, ""},
		{"authority only", "xdstp://xds.example.com", nil,
			`resource name "xdstp://xds.example.com" has no resource type after its authority`},
		{"unknown authority", "xdstp://other.example.com/envoy.config.listener.v3.Listener/foo", nil,
			`authority "other.example.com" not found in xds bootstrap for resource "xdstp://other.example.com/envoy.config.listener.v3.Listener/foo"`},
		{"authority differs by case", "xdstp://XDS.example.com/envoy.config.listener.v3.Listener/foo", nil,
			`authority "XDS.example.com" not found in xds bootstrap for resource "xdstp://XDS.example.com/envoy.config.listener.v3.Listener/foo"`},
		{"xdstp name without authority part", "xdstp:foo", nil,
			`resource name "xdstp:foo" starts with "xdstp:" but not with "xdstp://" and an authority`},
		{"bad percent-encoding in authority", "xdstp://a%zz/T/x", nil,
			`resource name "xdstp://a%zz/T/x": authority: bad percent-encoding "%zz"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := c.ServersFor(tt.resource)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("ServersFor(%q) error = %v, want %q", tt.resource, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ServersFor(%q) error: %v", tt.resource, err)
			}
			if !slices.Equal(uris(got), tt.want) {
				t.Errorf("ServersFor(%q) = %v, want %v", tt.resource, uris(got), tt.want)
			}
		})
	}
}

func TestServersForWithoutAuthorities(t *testing.T) {
	c := mustParse(t, withServers(""))
	if got, err := c.ServersFor("cluster-1"); err != nil || len(got) != 1 {
		t.Errorf("ServersFor(old-style) = %v, %v", uris(got), err)
	}
	_, err := c.ServersFor("xdstp:///envoy.config.cluster.v3.Cluster/c")
	if want := `authority "" not found in xds bootstrap for resource "xdstp:///envoy.config.cluster.v3.Cluster/c"`; err == nil || err.Error() != want {
		t.Errorf("ServersFor(xdstp:///...) error = %v, want %q", err, want)
	}
}

func TestServersForHandBuiltNilAuthority(t *testing.T) {
	top := []*ServerConfig{{URI: "top:1"}}
	c := &Config{Servers: top, Authorities: map[string]*Authority{"a": nil}}
	got, err := c.ServersFor("xdstp://a/t/n")
	if err != nil || !slices.Equal(uris(got), []string{"top:1"}) {
		t.Errorf("ServersFor = %v, %v; want top-level servers", uris(got), err)
	}
}

func TestClientListenerResourceName(t *testing.T) {
	fed := mustParse(t, withServers(`"authorities": {
		"xds.example.com": {"client_listener_resource_name_template": "xdstp://xds.example.com/envoy.config.listener.v3.Listener/client/%s?psm_project_id=1234"},
		"plain.example.com": {},
		"a b": {}
	}`))
	xdstpDefault := mustParse(t, withServers(`"client_default_listener_resource_name_template": "xdstp://xds.example.com/envoy.config.listener.v3.Listener/%s",
		"authorities": {"xds.example.com": {}}`))
	xdstpDefaultUnknown := mustParse(t, withServers(`"client_default_listener_resource_name_template": "xdstp://nowhere/envoy.config.listener.v3.Listener/%s"`))
	oldDefault := mustParse(t, withServers(`"client_default_listener_resource_name_template": "grpc/client/%s?x=%s"`))
	tests := []struct {
		name            string
		c               *Config
		authority, path string
		want, wantErr   string
	}{
		{"no authority, default template", fed, "", "/server.example.com:443", "server.example.com:443", ""},
		{"no authority, host kept verbatim", fed, "", "/whee%/server.example.com", "whee%/server.example.com", ""},
		{"only one leading slash removed", fed, "", "//x", "/x", ""},
		{"path without slash", fed, "", "x", "x", ""},
		{"authority with its template, host percent-encoded", fed, "xds.example.com", "/whee%/server.example.com",
			"xdstp://xds.example.com/envoy.config.listener.v3.Listener/client/whee%25/server.example.com?psm_project_id=1234", ""},
		{"authority with default template", fed, "plain.example.com", "/svc a:80",
			"xdstp://plain.example.com/envoy.config.listener.v3.Listener/svc%20a:80", ""},
		{"authority needing encoding", fed, "a b", "/svc", "xdstp://a%20b/envoy.config.listener.v3.Listener/svc", ""},
		{"unknown target authority", fed, "nowhere", "/svc", "",
			`authority "nowhere" of target "xds://nowhere/svc" not found in xds bootstrap`},
		{"xdstp default template encodes host", xdstpDefault, "", "/a b?c",
			"xdstp://xds.example.com/envoy.config.listener.v3.Listener/a%20b%3Fc", ""},
		{"xdstp default template with unknown authority", xdstpDefaultUnknown, "", "/svc", "",
			`authority "nowhere" not found in xds bootstrap for resource "xdstp://nowhere/envoy.config.listener.v3.Listener/svc"`},
		{"old-style template replaces every %s", oldDefault, "", "/a b", "grpc/client/a b?x=a b", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.c.ClientListenerResourceName(tt.authority, tt.path)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("ClientListenerResourceName(%q, %q) = %q, %v; want error %q", tt.authority, tt.path, got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("ClientListenerResourceName(%q, %q) = %q, %v; want %q", tt.authority, tt.path, got, err, tt.want)
			}
		})
	}
}

func TestServerListenerResourceName(t *testing.T) {
	fed := mustParse(t, federationDoc)
	plain := mustParse(t, withServers(`"server_listener_resource_name_template": "grpc/server?xds.resource.listening_address=%s"`))
	unknown := mustParse(t, withServers(`"server_listener_resource_name_template": "xdstp://nowhere/envoy.config.listener.v3.Listener/%s"`))
	none := mustParse(t, withServers(""))
	tests := []struct {
		name          string
		c             *Config
		addr          string
		want, wantErr string
	}{
		{"old-style IPv4 verbatim", plain, "0.0.0.0:8080", "grpc/server?xds.resource.listening_address=0.0.0.0:8080", ""},
		{"old-style IPv6 verbatim", plain, "[::]:8080", "grpc/server?xds.resource.listening_address=[::]:8080", ""},
		{"xdstp IPv6 encoded", fed, "[::]:8080", "xdstp://xds.example.com/envoy.config.listener.v3.Listener/grpc/server/%5B::%5D:8080", ""},
		{"xdstp IPv4", fed, "10.0.0.1:443", "xdstp://xds.example.com/envoy.config.listener.v3.Listener/grpc/server/10.0.0.1:443", ""},
		{"xdstp unknown authority", unknown, "0.0.0.0:1", "",
			`authority "nowhere" not found in xds bootstrap for resource "xdstp://nowhere/envoy.config.listener.v3.Listener/0.0.0.0:1"`},
		{"no template", none, "0.0.0.0:1", "", "xds bootstrap has no server_listener_resource_name_template"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.c.ServerListenerResourceName(tt.addr)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("ServerListenerResourceName(%q) = %q, %v; want error %q", tt.addr, got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("ServerListenerResourceName(%q) = %q, %v; want %q", tt.addr, got, err, tt.want)
			}
		})
	}
}
