package bootstrap

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

// srv is a valid server object for documents that test something else.
const srv = `{"server_uri": "xds.example.com:443", "channel_creds": [{"type": "insecure"}]}`

// withServers returns a bootstrap with one valid top-level server and the
// given extra top-level members (a JSON object body without braces).
func withServers(extra string) string {
	if extra == "" {
		return `{"xds_servers": [` + srv + `]}`
	}
	return `{"xds_servers": [` + srv + `], ` + extra + `}`
}

// serverDoc returns a bootstrap whose only server is the given object.
func serverDoc(server string) string {
	return `{"xds_servers": [` + server + `]}`
}

// credsDoc returns a bootstrap whose only server has the given channel_creds.
func credsDoc(creds string) string {
	return serverDoc(`{"server_uri": "s:1", "channel_creds": ` + creds + `}`)
}

func TestParseErrors(t *testing.T) {
	long := strings.Repeat("x", 100)
	tests := []struct {
		name string
		doc  string
		want string // the whole error text
	}{
		// JSON syntax.
		{"syntax error on line 1", `{"xds_servers": [}`,
			`xds bootstrap: invalid JSON at line 1, column 18: invalid character '}' looking for beginning of value`},
		{"syntax error on line 3", "{\n  \"xds_servers\": [\n    {\"server_uri\" \"x\"}\n  ]\n}",
			`xds bootstrap: invalid JSON at line 3, column 19: invalid character '"' after object key`},
		{"empty document", ``,
			`xds bootstrap: invalid JSON at line 1, column 1: unexpected end of JSON input`},
		{"trailing data", "{}\n x",
			`xds bootstrap: invalid JSON at line 2, column 2: invalid character 'x' after top-level value`},
		{"not an object", `[1, 2]`,
			`xds bootstrap: want a JSON object, got [1,2]`},

		// xds_servers at the top level.
		{"xds_servers missing", `{"node": {}}`,
			`xds bootstrap: xds_servers: missing`},
		{"xds_servers null", `{"xds_servers": null}`,
			`xds bootstrap: xds_servers: missing`},
		{"xds_servers empty", `{"xds_servers": []}`,
			`xds bootstrap: xds_servers: empty`},
		{"xds_servers not an array", `{"xds_servers": {"server_uri": "a"}}`,
			`xds bootstrap: xds_servers: want a JSON array, got {"server_uri":"a"}`},
		{"server not an object", `{"xds_servers": [` + srv + `, 3]}`,
			`xds bootstrap: xds_servers[1]: want a JSON object, got 3`},
		{"server null", `{"xds_servers": [null]}`,
			`xds bootstrap: xds_servers[0]: want a JSON object, got null`},

		// server_uri.
		{"server_uri missing", serverDoc(`{"channel_creds": [{"type": "insecure"}]}`),
			`xds bootstrap: xds_servers[0].server_uri: missing`},
		{"server_uri empty", `{"xds_servers": [` + srv + `, {"server_uri": "", "channel_creds": [{"type": "insecure"}]}]}`,
			`xds bootstrap: xds_servers[1].server_uri: empty`},
		{"server_uri not a string", serverDoc(`{"server_uri": 42, "channel_creds": [{"type": "insecure"}]}`),
			`xds bootstrap: xds_servers[0].server_uri: want a string, got 42`},

		// channel_creds.
		{"channel_creds missing", serverDoc(`{"server_uri": "s:1"}`),
			`xds bootstrap: xds_servers[0].channel_creds: missing`},
		{"channel_creds empty", credsDoc(`[]`),
			`xds bootstrap: xds_servers[0].channel_creds: empty`},
		{"channel_creds not an array", credsDoc(`"insecure"`),
			`xds bootstrap: xds_servers[0].channel_creds: want a JSON array, got "insecure"`},
		{"channel_creds entry not an object", credsDoc(`[{"type": "insecure"}, "tls"]`),
			`xds bootstrap: xds_servers[0].channel_creds[1]: want a JSON object, got "tls"`},
		{"channel_creds type not a string", credsDoc(`[{"type": 1}]`),
			`xds bootstrap: xds_servers[0].channel_creds[0].type: want a string, got 1`},
		{"channel_creds config not an object", credsDoc(`[{"type": "insecure", "config": "x"}]`),
			`xds bootstrap: xds_servers[0].channel_creds[0].config: want a JSON object, got "x"`},
		{"config of an unsupported type not an object", credsDoc(`[{"type": "unknown_creds", "config": []}, {"type": "insecure"}]`),
			`xds bootstrap: xds_servers[0].channel_creds[0].config: want a JSON object, got []`},
		{"no supported type", credsDoc(`[{"type": "unknown_creds"}, {"type": "foo"}]`),
			`xds bootstrap: xds_servers[0].channel_creds: no supported type among ["unknown_creds" "foo"]`},
		{"no supported type, type missing", credsDoc(`[{"config": {}}]`),
			`xds bootstrap: xds_servers[0].channel_creds: no supported type among [""]`},

		// tls config (gRFC A65), checked when tls is the selected type.
		{"tls config not an object", credsDoc(`[{"type": "tls", "config": 5}]`),
			`xds bootstrap: xds_servers[0].channel_creds[0].config: want a JSON object, got 5`},
		{"tls certificate without key", credsDoc(`[{"type": "unknown_creds"}, {"type": "tls", "config": {"certificate_file": "/c.pem"}}]`),
			`xds bootstrap: xds_servers[0].channel_creds[1].config.private_key_file: must be set because certificate_file is "/c.pem"`},
		{"tls key without certificate", credsDoc(`[{"type": "tls", "config": {"private_key_file": "/k.pem"}}]`),
			`xds bootstrap: xds_servers[0].channel_creds[0].config.certificate_file: must be set because private_key_file is "/k.pem"`},
		{"tls ca_certificate_file not a string", credsDoc(`[{"type": "tls", "config": {"ca_certificate_file": true}}]`),
			`xds bootstrap: xds_servers[0].channel_creds[0].config.ca_certificate_file: want a string, got true`},
		{"tls certificate_file not a string", credsDoc(`[{"type": "tls", "config": {"certificate_file": ["a"]}}]`),
			`xds bootstrap: xds_servers[0].channel_creds[0].config.certificate_file: want a string, got ["a"]`},
		{"tls private_key_file not a string", credsDoc(`[{"type": "tls", "config": {"private_key_file": {}}}]`),
			`xds bootstrap: xds_servers[0].channel_creds[0].config.private_key_file: want a string, got {}`},
		{"tls refresh_interval not a duration", credsDoc(`[{"type": "tls", "config": {"refresh_interval": "abc"}}]`),
			`xds bootstrap: xds_servers[0].channel_creds[0].config.refresh_interval: "abc" is not a duration such as "600s"`},
		{"tls refresh_interval without unit", credsDoc(`[{"type": "tls", "config": {"refresh_interval": "60"}}]`),
			`xds bootstrap: xds_servers[0].channel_creds[0].config.refresh_interval: "60" is not a duration such as "600s"`},
		{"tls refresh_interval a number", credsDoc(`[{"type": "tls", "config": {"refresh_interval": 60}}]`),
			`xds bootstrap: xds_servers[0].channel_creds[0].config.refresh_interval: want a duration string such as "600s", got 60`},
		{"tls refresh_interval zero", credsDoc(`[{"type": "tls", "config": {"refresh_interval": "0s"}}]`),
			`xds bootstrap: xds_servers[0].channel_creds[0].config.refresh_interval: "0s" is not positive`},
		{"tls refresh_interval negative", credsDoc(`[{"type": "tls", "config": {"refresh_interval": "-5s"}}]`),
			`xds bootstrap: xds_servers[0].channel_creds[0].config.refresh_interval: "-5s" is not positive`},

		// server_features.
		{"server_features not an array", serverDoc(`{"server_uri": "s:1", "channel_creds": [{"type": "insecure"}], "server_features": "trusted_xds_server"}`),
			`xds bootstrap: xds_servers[0].server_features: want a JSON array, got "trusted_xds_server"`},

		// node.
		{"node not an object", withServers(`"node": "n"`),
			`xds bootstrap: node: want a JSON object, got "n"`},
		{"node.id not a string", withServers(`"node": {"id": 7}`),
			`xds bootstrap: node.id: want a string, got 7`},
		{"node.cluster not a string", withServers(`"node": {"cluster": false}`),
			`xds bootstrap: node.cluster: want a string, got false`},
		{"node.locality not an object", withServers(`"node": {"locality": "us"}`),
			`xds bootstrap: node.locality: want a JSON object, got "us"`},
		{"node.locality.region not a string", withServers(`"node": {"locality": {"region": 1}}`),
			`xds bootstrap: node.locality.region: want a string, got 1`},
		{"node.locality.zone not a string", withServers(`"node": {"locality": {"zone": [1]}}`),
			`xds bootstrap: node.locality.zone: want a string, got [1]`},
		{"node.locality.sub_zone not a string", withServers(`"node": {"locality": {"sub_zone": {"a": 1}}}`),
			`xds bootstrap: node.locality.sub_zone: want a string, got {"a":1}`},
		{"node.metadata a number", withServers(`"node": {"metadata": 3}`),
			`xds bootstrap: node.metadata: want a JSON object, got 3`},
		{"node.metadata an array", withServers(`"node": {"metadata": [ 1, 2 ]}`),
			`xds bootstrap: node.metadata: want a JSON object, got [1,2]`},
		{"long bad value is shortened", withServers(`"node": {"metadata": "` + long + `"}`),
			`xds bootstrap: node.metadata: want a JSON object, got "` + long[:63] + `...`},

		// Templates.
		{"client default template not a string", withServers(`"client_default_listener_resource_name_template": 1`),
			`xds bootstrap: client_default_listener_resource_name_template: want a string, got 1`},
		{"server template not a string", withServers(`"server_listener_resource_name_template": {}`),
			`xds bootstrap: server_listener_resource_name_template: want a string, got {}`},

		// authorities.
		{"authorities not an object", withServers(`"authorities": []`),
			`xds bootstrap: authorities: want a JSON object, got []`},
		{"authority not an object", withServers(`"authorities": {"a": 1}`),
			`xds bootstrap: authorities["a"]: want a JSON object, got 1`},
		{"authority null", withServers(`"authorities": {"a": null}`),
			`xds bootstrap: authorities["a"]: want a JSON object, got null`},
		{"authority template for another authority", withServers(`"authorities": {"a": {"client_listener_resource_name_template": "xdstp://b/x/%s"}}`),
			`xds bootstrap: authorities["a"].client_listener_resource_name_template: "xdstp://b/x/%s" does not start with "xdstp://a/"`},
		{"authority template without slash after authority", withServers(`"authorities": {"a": {"client_listener_resource_name_template": "xdstp://ab/%s"}}`),
			`xds bootstrap: authorities["a"].client_listener_resource_name_template: "xdstp://ab/%s" does not start with "xdstp://a/"`},
		{"authority template old-style", withServers(`"authorities": {"a": {"client_listener_resource_name_template": "%s"}}`),
			`xds bootstrap: authorities["a"].client_listener_resource_name_template: "%s" does not start with "xdstp://a/"`},
		{"authority template must use the encoded name", withServers(`"authorities": {"a b": {"client_listener_resource_name_template": "xdstp://a b/x/%s"}}`),
			`xds bootstrap: authorities["a b"].client_listener_resource_name_template: "xdstp://a b/x/%s" does not start with "xdstp://a%20b/"`},
		{"empty authority template for another authority", withServers(`"authorities": {"": {"client_listener_resource_name_template": "xdstp://a/x/%s"}}`),
			`xds bootstrap: authorities[""].client_listener_resource_name_template: "xdstp://a/x/%s" does not start with "xdstp:///"`},
		{"authority template not a string", withServers(`"authorities": {"a": {"client_listener_resource_name_template": 2}}`),
			`xds bootstrap: authorities["a"].client_listener_resource_name_template: want a string, got 2`},
		{"authority xds_servers empty", withServers(`"authorities": {"a": {"xds_servers": []}}`),
			`xds bootstrap: authorities["a"].xds_servers: empty`},
		{"authority xds_servers not an array", withServers(`"authorities": {"a": {"xds_servers": "s:1"}}`),
			`xds bootstrap: authorities["a"].xds_servers: want a JSON array, got "s:1"`},
		{"authority server bad", withServers(`"authorities": {"a": {"xds_servers": [` + srv + `, {"server_uri": "", "channel_creds": []}]}}`),
			`xds bootstrap: authorities["a"].xds_servers[1].server_uri: empty`},
		{"authority server creds bad", withServers(`"authorities": {"a": {"xds_servers": [{"server_uri": "s:1", "channel_creds": [{"type": "unknown_creds"}]}]}}`),
			`xds bootstrap: authorities["a"].xds_servers[0].channel_creds: no supported type among ["unknown_creds"]`},
		{"first bad authority in name order", withServers(`"authorities": {"b": 1, "a": 2}`),
			`xds bootstrap: authorities["a"]: want a JSON object, got 2`},

		// certificate_providers.
		{"certificate_providers not an object", withServers(`"certificate_providers": "p"`),
			`xds bootstrap: certificate_providers: want a JSON object, got "p"`},
		{"certificate provider not an object", withServers(`"certificate_providers": {"p": []}`),
			`xds bootstrap: certificate_providers["p"]: want a JSON object, got []`},
		{"plugin_name missing", withServers(`"certificate_providers": {"p": {"config": {}}}`),
			`xds bootstrap: certificate_providers["p"].plugin_name: missing`},
		{"plugin_name empty", withServers(`"certificate_providers": {"p": {"plugin_name": ""}}`),
			`xds bootstrap: certificate_providers["p"].plugin_name: empty`},
		{"plugin_name not a string", withServers(`"certificate_providers": {"p": {"plugin_name": 1}}`),
			`xds bootstrap: certificate_providers["p"].plugin_name: want a string, got 1`},
		{"certificate provider config not an object", withServers(`"certificate_providers": {"p": {"plugin_name": "file_watcher", "config": "x"}}`),
			`xds bootstrap: certificate_providers["p"].config: want a JSON object, got "x"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse([]byte(tt.doc))
			if err == nil {
				t.Fatalf("Parse(%s) = %+v, want error %q", tt.doc, c, tt.want)
			}
			if c != nil {
				t.Errorf("Parse(%s) returned a config with the error", tt.doc)
			}
			if got := err.Error(); got != tt.want {
				t.Errorf("Parse(%s) error\n got: %s\nwant: %s", tt.doc, got, tt.want)
			}
		})
	}
}

func TestParseSyntaxErrorWraps(t *testing.T) {
	_, err := Parse([]byte(`{"xds_servers": `))
	var se *json.SyntaxError
	if !errors.As(err, &se) {
		t.Fatalf("Parse error %v does not wrap *json.SyntaxError", err)
	}
}

func TestParseDefaults(t *testing.T) {
	c, err := Parse([]byte(withServers("")))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Servers) != 1 || c.Servers[0].URI != "xds.example.com:443" {
		t.Errorf("Servers = %v, want [xds.example.com:443]", c.Servers)
	}
	if c.Node == nil || !proto.Equal(c.Node, &corev3.Node{}) {
		t.Errorf("Node = %v, want an empty node", c.Node)
	}
	if c.NodeID() != "" {
		t.Errorf("NodeID() = %q, want empty", c.NodeID())
	}
	if c.ClientDefaultListenerResourceNameTemplate != "%s" {
		t.Errorf("ClientDefaultListenerResourceNameTemplate = %q, want %%s", c.ClientDefaultListenerResourceNameTemplate)
	}
	if c.ServerListenerResourceNameTemplate != "" {
		t.Errorf("ServerListenerResourceNameTemplate = %q, want empty", c.ServerListenerResourceNameTemplate)
	}
	if c.Authorities != nil || c.CertificateProviders != nil {
		t.Errorf("Authorities = %v, CertificateProviders = %v, want nil", c.Authorities, c.CertificateProviders)
	}
}

func TestParseNullIsAbsent(t *testing.T) {
	doc := withServers(`"node": null, "authorities": null, "certificate_providers": null,
		"client_default_listener_resource_name_template": null, "server_listener_resource_name_template": null`)
	c, err := Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if c.Node == nil || c.Authorities != nil || c.CertificateProviders != nil ||
		c.ClientDefaultListenerResourceNameTemplate != "%s" || c.ServerListenerResourceNameTemplate != "" {
		t.Errorf("null members were not treated as absent: %+v", c)
	}
	c, err = Parse([]byte(withServers(`"authorities": {"a": {"xds_servers": null, "client_listener_resource_name_template": null}}`)))
	if err != nil {
		t.Fatal(err)
	}
	if a := c.Authorities["a"]; a.Servers != nil || a.ClientListenerResourceNameTemplate != "xdstp://a/envoy.config.listener.v3.Listener/%s" {
		t.Errorf("authority with null members = %+v", a)
	}
}

func TestParseServers(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		want []*ServerConfig
	}{
		{
			name: "order of xds_servers is kept",
			doc: `{"xds_servers": [
				{"server_uri": "primary:443", "channel_creds": [{"type": "insecure"}]},
				{"server_uri": "fallback:443", "channel_creds": [{"type": "insecure"}]}]}`,
			want: []*ServerConfig{
				{URI: "primary:443", ChannelCreds: []ChannelCreds{{Type: "insecure"}}, SelectedCreds: ChannelCreds{Type: "insecure"}},
				{URI: "fallback:443", ChannelCreds: []ChannelCreds{{Type: "insecure"}}, SelectedCreds: ChannelCreds{Type: "insecure"}},
			},
		},
		{
			name: "unknown_creds is skipped, first supported type selected, all entries kept",
			doc: credsDoc(`[{"type": "unknown_creds"}, {"type": "insecure", "config": {"x": 1}},
				{"type": "tls", "config": {"certificate_file": "only-cert.pem"}}]`),
			want: []*ServerConfig{{
				URI: "s:1",
				ChannelCreds: []ChannelCreds{
					{Type: "unknown_creds"},
					{Type: "insecure", Config: json.RawMessage(`{"x": 1}`)},
					{Type: "tls", Config: json.RawMessage(`{"certificate_file": "only-cert.pem"}`)},
				},
				SelectedCreds: ChannelCreds{Type: "insecure", Config: json.RawMessage(`{"x": 1}`)},
			}},
		},
		{
			name: "entry without type is skipped",
			doc:  credsDoc(`[{"config": {}}, {"type": "tls"}]`),
			want: []*ServerConfig{{
				URI:           "s:1",
				ChannelCreds:  []ChannelCreds{{Type: "", Config: json.RawMessage(`{}`)}, {Type: "tls"}},
				SelectedCreds: ChannelCreds{Type: "tls"},
			}},
		},
		{
			name: "tls with full config",
			doc: credsDoc(`[{"type": "tls", "config": {"ca_certificate_file": "ca.pem", "certificate_file": "c.pem",
				"private_key_file": "k.pem", "refresh_interval": "1.5s", "spiffe_trust_bundle_map_file": "ignored"}}]`),
			want: []*ServerConfig{{
				URI: "s:1",
				ChannelCreds: []ChannelCreds{{Type: "tls", Config: json.RawMessage(`{"ca_certificate_file": "ca.pem", "certificate_file": "c.pem",
				"private_key_file": "k.pem", "refresh_interval": "1.5s", "spiffe_trust_bundle_map_file": "ignored"}`)}},
				SelectedCreds: ChannelCreds{Type: "tls", Config: json.RawMessage(`{"ca_certificate_file": "ca.pem", "certificate_file": "c.pem",
				"private_key_file": "k.pem", "refresh_interval": "1.5s", "spiffe_trust_bundle_map_file": "ignored"}`)},
			}},
		},
		{
			name: "null config counts as absent",
			doc:  credsDoc(`[{"type": "tls", "config": null}]`),
			want: []*ServerConfig{{URI: "s:1", ChannelCreds: []ChannelCreds{{Type: "tls"}}, SelectedCreds: ChannelCreds{Type: "tls"}}},
		},
		{
			name: "server features: strings kept in order, others ignored, known ones set flags",
			doc: serverDoc(`{"server_uri": "s:1", "channel_creds": [{"type": "insecure"}], "server_features": [
				"xds_v3", 3, "trusted_xds_server", null, {"a": 1}, "fail_on_data_errors", "ignore_resource_deletion",
				"resource_timer_is_transient_error", "delta_xds", "something_new"]}`),
			want: []*ServerConfig{{
				URI: "s:1", ChannelCreds: []ChannelCreds{{Type: "insecure"}}, SelectedCreds: ChannelCreds{Type: "insecure"},
				ServerFeatures: []string{"xds_v3", "trusted_xds_server", "fail_on_data_errors", "ignore_resource_deletion",
					"resource_timer_is_transient_error", "delta_xds", "something_new"},
				IgnoreResourceDeletion: true, FailOnDataErrors: true, ResourceTimerIsTransientError: true, TrustedXDSServer: true, DeltaXDS: true,
			}},
		},
		{
			name: "one feature sets only its flag",
			doc:  serverDoc(`{"server_uri": "s:1", "channel_creds": [{"type": "insecure"}], "server_features": ["fail_on_data_errors"]}`),
			want: []*ServerConfig{{
				URI: "s:1", ChannelCreds: []ChannelCreds{{Type: "insecure"}}, SelectedCreds: ChannelCreds{Type: "insecure"},
				ServerFeatures: []string{"fail_on_data_errors"}, FailOnDataErrors: true,
			}},
		},
		{
			name: "delta_xds alone",
			doc:  serverDoc(`{"server_uri": "s:1", "channel_creds": [{"type": "insecure"}], "server_features": ["delta_xds"]}`),
			want: []*ServerConfig{{
				URI: "s:1", ChannelCreds: []ChannelCreds{{Type: "insecure"}}, SelectedCreds: ChannelCreds{Type: "insecure"},
				ServerFeatures: []string{"delta_xds"}, DeltaXDS: true,
			}},
		},
		{
			name: "unknown keys are ignored",
			doc: serverDoc(`{"server_uri": "s:1", "channel_creds": [{"type": "insecure", "extra": [1]}],
				"call_creds": [{"type": "jwt_token_file"}], "future": {"a": "b"}}`),
			want: []*ServerConfig{{URI: "s:1", ChannelCreds: []ChannelCreds{{Type: "insecure"}}, SelectedCreds: ChannelCreds{Type: "insecure"}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse([]byte(tt.doc))
			if err != nil {
				t.Fatal(err)
			}
			if len(c.Servers) != len(tt.want) {
				t.Fatalf("got %d servers, want %d", len(c.Servers), len(tt.want))
			}
			for i := range tt.want {
				if diff := diffServer(c.Servers[i], tt.want[i]); diff != "" {
					t.Errorf("server %d: %s", i, diff)
				}
			}
		})
	}
}

// diffServer describes how got differs from want, or returns "".
func diffServer(got, want *ServerConfig) string {
	var d []string
	if got.URI != want.URI {
		d = append(d, "URI "+got.URI+" != "+want.URI)
	}
	if !slices.EqualFunc(got.ChannelCreds, want.ChannelCreds, equalCreds) {
		d = append(d, "ChannelCreds "+showCreds(got.ChannelCreds...)+" != "+showCreds(want.ChannelCreds...))
	}
	if !equalCreds(got.SelectedCreds, want.SelectedCreds) {
		d = append(d, "SelectedCreds "+showCreds(got.SelectedCreds)+" != "+showCreds(want.SelectedCreds))
	}
	if !slices.Equal(got.ServerFeatures, want.ServerFeatures) {
		d = append(d, "ServerFeatures "+strings.Join(got.ServerFeatures, ",")+" != "+strings.Join(want.ServerFeatures, ","))
	}
	if got.IgnoreResourceDeletion != want.IgnoreResourceDeletion || got.FailOnDataErrors != want.FailOnDataErrors ||
		got.ResourceTimerIsTransientError != want.ResourceTimerIsTransientError || got.TrustedXDSServer != want.TrustedXDSServer ||
		got.DeltaXDS != want.DeltaXDS {
		d = append(d, "feature flags differ")
	}
	return strings.Join(d, "; ")
}

func equalCreds(a, b ChannelCreds) bool {
	return a.Type == b.Type && string(a.Config) == string(b.Config)
}

func showCreds(cs ...ChannelCreds) string {
	var parts []string
	for _, c := range cs {
		parts = append(parts, c.Type+"="+string(c.Config))
	}
	return "[" + strings.Join(parts, " ") + "]"
}

func TestParseNode(t *testing.T) {
	md, err := structpb.NewStruct(map[string]any{
		"TRAFFICDIRECTOR_NETWORK_NAME": "default",
		"nested":                       map[string]any{"list": []any{1.0, "two", true, nil}},
		"n":                            1.5,
	})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		node string
		want *corev3.Node
	}{
		{
			name: "all fields",
			node: `{"id": "projects/1/networks/default/nodes/abc", "cluster": "c1",
				"locality": {"region": "r", "zone": "z", "sub_zone": "sz"},
				"metadata": {"TRAFFICDIRECTOR_NETWORK_NAME": "default", "nested": {"list": [1, "two", true, null]}, "n": 1.5}}`,
			want: &corev3.Node{
				Id: "projects/1/networks/default/nodes/abc", Cluster: "c1",
				Locality: &corev3.Locality{Region: "r", Zone: "z", SubZone: "sz"},
				Metadata: md,
			},
		},
		{
			name: "client-owned fields are not taken from the bootstrap",
			node: `{"id": "n1", "user_agent_name": "evil", "user_agent_version": "9", "build_version": "1.0",
				"client_features": ["envoy.lb.does_not_support_overprovisioning"], "extensions": [{}]}`,
			want: &corev3.Node{Id: "n1"},
		},
		{
			name: "partial locality",
			node: `{"locality": {"zone": "z"}}`,
			want: &corev3.Node{Locality: &corev3.Locality{Zone: "z"}},
		},
		{
			name: "empty locality is no locality",
			node: `{"locality": {}}`,
			want: &corev3.Node{},
		},
		{
			name: "empty metadata",
			node: `{"metadata": {}}`,
			want: &corev3.Node{Metadata: &structpb.Struct{}},
		},
		{
			name: "empty node",
			node: `{}`,
			want: &corev3.Node{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse([]byte(withServers(`"node": ` + tt.node)))
			if err != nil {
				t.Fatal(err)
			}
			if !proto.Equal(c.Node, tt.want) {
				t.Errorf("Node = %v, want %v", c.Node, tt.want)
			}
			if c.NodeID() != tt.want.GetId() {
				t.Errorf("NodeID() = %q, want %q", c.NodeID(), tt.want.GetId())
			}
		})
	}
}

func TestNodeIDNilConfig(t *testing.T) {
	var c *Config
	if got := c.NodeID(); got != "" {
		t.Errorf("nil Config NodeID() = %q", got)
	}
	if got := (&Config{}).NodeID(); got != "" {
		t.Errorf("Config without node NodeID() = %q", got)
	}
}

func TestParseTemplates(t *testing.T) {
	tests := []struct {
		name                   string
		extra                  string
		wantClient, wantServer string
	}{
		{"absent", ``, "%s", ""},
		{"empty client template means default", `"client_default_listener_resource_name_template": ""`, "%s", ""},
		{"set", `"client_default_listener_resource_name_template": "xdstp://a/envoy.config.listener.v3.Listener/%s",
			"server_listener_resource_name_template": "grpc/server?xds.resource.listening_address=%s"`,
			"xdstp://a/envoy.config.listener.v3.Listener/%s", "grpc/server?xds.resource.listening_address=%s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse([]byte(withServers(tt.extra)))
			if err != nil {
				t.Fatal(err)
			}
			if c.ClientDefaultListenerResourceNameTemplate != tt.wantClient || c.ServerListenerResourceNameTemplate != tt.wantServer {
				t.Errorf("templates = %q, %q; want %q, %q", c.ClientDefaultListenerResourceNameTemplate,
					c.ServerListenerResourceNameTemplate, tt.wantClient, tt.wantServer)
			}
		})
	}
}

func TestParseAuthorities(t *testing.T) {
	doc := withServers(`"authorities": {
		"": {},
		"a.example.com": {"xds_servers": [{"server_uri": "a:443", "channel_creds": [{"type": "tls"}], "server_features": ["trusted_xds_server"]}]},
		"b.example.com": {"client_listener_resource_name_template": "xdstp://b.example.com/envoy.config.listener.v3.Listener/client/%s?p=1"},
		"a b/c": {"client_listener_resource_name_template": ""},
		"d": {"client_listener_resource_name_template": "xdstp://d/%s", "future": 1}
	}`)
	c, err := Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name         string
		wantTemplate string
		wantServers  []string // nil: none listed
	}{
		{"", "xdstp:///envoy.config.listener.v3.Listener/%s", nil},
		{"a.example.com", "xdstp://a.example.com/envoy.config.listener.v3.Listener/%s", []string{"a:443"}},
		{"b.example.com", "xdstp://b.example.com/envoy.config.listener.v3.Listener/client/%s?p=1", nil},
		{"a b/c", "xdstp://a%20b%2Fc/envoy.config.listener.v3.Listener/%s", nil},
		{"d", "xdstp://d/%s", nil},
	}
	if len(c.Authorities) != len(tests) {
		t.Errorf("got %d authorities, want %d", len(c.Authorities), len(tests))
	}
	for _, tt := range tests {
		a, ok := c.Authorities[tt.name]
		if !ok {
			t.Errorf("authority %q missing", tt.name)
			continue
		}
		if a.Name != tt.name {
			t.Errorf("authority %q: Name = %q", tt.name, a.Name)
		}
		if a.ClientListenerResourceNameTemplate != tt.wantTemplate {
			t.Errorf("authority %q: template = %q, want %q", tt.name, a.ClientListenerResourceNameTemplate, tt.wantTemplate)
		}
		if tt.wantServers == nil {
			if a.Servers != nil {
				t.Errorf("authority %q: Servers = %v, want nil", tt.name, a.Servers)
			}
			continue
		}
		var uris []string
		for _, s := range a.Servers {
			uris = append(uris, s.URI)
		}
		if !slices.Equal(uris, tt.wantServers) {
			t.Errorf("authority %q: servers = %v, want %v", tt.name, uris, tt.wantServers)
		}
	}
	if s := c.Authorities["a.example.com"].Servers[0]; !s.TrustedXDSServer || s.SelectedCreds.Type != "tls" {
		t.Errorf("authority server = %+v, want trusted tls", s)
	}
}

func TestParseCertificateProviders(t *testing.T) {
	doc := withServers(`"certificate_providers": {
		"google_cloud_private_spiffe": {"plugin_name": "file_watcher",
			"config": {"certificate_file": "/certs/cert.pem", "private_key_file": "/certs/key.pem", "refresh_interval": "600s"}},
		"bare": {"plugin_name": "unknown_plugin", "extra": true}
	}`)
	c, err := Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]CertificateProvider{
		"google_cloud_private_spiffe": {PluginName: "file_watcher",
			Config: json.RawMessage(`{"certificate_file": "/certs/cert.pem", "private_key_file": "/certs/key.pem", "refresh_interval": "600s"}`)},
		"bare": {PluginName: "unknown_plugin"},
	}
	if len(c.CertificateProviders) != len(want) {
		t.Fatalf("CertificateProviders = %v, want %v", c.CertificateProviders, want)
	}
	for name, w := range want {
		g := c.CertificateProviders[name]
		if g.PluginName != w.PluginName || string(g.Config) != string(w.Config) {
			t.Errorf("provider %q = {%q %s}, want {%q %s}", name, g.PluginName, g.Config, w.PluginName, w.Config)
		}
	}
}

func TestParseIgnoresUnknownTopLevelKeys(t *testing.T) {
	doc := withServers(`"future_key": {"deep": [1, 2, {"x": null}]}, "allowed_grpc_services": {}, "fallback": true`)
	if _, err := Parse([]byte(doc)); err != nil {
		t.Errorf("Parse with unknown keys: %v", err)
	}
}

func TestParseUnselectedTLSIsNotChecked(t *testing.T) {
	// Only the selected entry has to make sense to this package.
	doc := credsDoc(`[{"type": "insecure"}, {"type": "tls", "config": {"certificate_file": "c.pem"}}]`)
	c, err := Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Servers[0].SelectedCreds.Type; got != "insecure" {
		t.Errorf("SelectedCreds.Type = %q, want insecure", got)
	}
}

func TestParseServerConfig(t *testing.T) {
	s, err := ParseServerConfig([]byte(`{"server_uri": "lrs:443", "channel_creds": [{"type": "insecure"}], "server_features": ["trusted_xds_server"]}`))
	if err != nil {
		t.Fatal(err)
	}
	if s.URI != "lrs:443" || !s.TrustedXDSServer {
		t.Errorf("ParseServerConfig = %+v", s)
	}
	for _, tt := range []struct{ doc, want string }{
		{`{"channel_creds": [{"type": "insecure"}]}`, `xds server config: server_uri: missing`},
		{`{"server_uri": "s", "channel_creds": [{"type": "unknown_creds"}]}`, `xds server config: channel_creds: no supported type among ["unknown_creds"]`},
		{`[]`, `xds server config: want a JSON object, got []`},
		{`{`, `xds server config: invalid JSON at line 1, column 1: unexpected end of JSON input`},
	} {
		_, err := ParseServerConfig([]byte(tt.doc))
		if err == nil || err.Error() != tt.want {
			t.Errorf("ParseServerConfig(%s) error = %v, want %q", tt.doc, err, tt.want)
		}
	}
}

func TestParseFile(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.json")
	if err := os.WriteFile(good, []byte(withServers(`"node": {"id": "from-file"}`)), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := ParseFile(good)
	if err != nil {
		t.Fatal(err)
	}
	if c.NodeID() != "from-file" {
		t.Errorf("NodeID() = %q, want from-file", c.NodeID())
	}

	missing := filepath.Join(dir, "missing.json")
	_, err = ParseFile(missing)
	if want := `xds bootstrap file "` + missing + `": open: no such file or directory`; err == nil || err.Error() != want {
		t.Errorf("ParseFile(missing) error = %v, want %q", err, want)
	}
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ParseFile(missing) error %v is not fs.ErrNotExist", err)
	}

	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"xds_servers": []}`), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = ParseFile(bad)
	if want := `xds bootstrap file "` + bad + `": xds_servers: empty`; err == nil || err.Error() != want {
		t.Errorf("ParseFile(bad) error = %v, want %q", err, want)
	}
	// A device that never ends, or a file too large to be a bootstrap, is
	// refused after MaxFileSize bytes.
	big := filepath.Join(dir, "big.json")
	if err := os.WriteFile(big, append([]byte(withServers("")), bytes.Repeat([]byte(" "), MaxFileSize)...), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/dev/zero", big} {
		_, err = ParseFile(path)
		if want := `xds bootstrap file "` + path + `": larger than 4 MiB: not a bootstrap file`; err == nil || err.Error() != want {
			t.Errorf("ParseFile(%s) error = %v, want %q", path, err, want)
		}
	}
}
