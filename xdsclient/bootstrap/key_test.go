package bootstrap

import (
	"encoding/json"
	"testing"
)

func parseServerT(t *testing.T, doc string) *ServerConfig {
	t.Helper()
	s, err := ParseServerConfig([]byte(doc))
	if err != nil {
		t.Fatalf("ParseServerConfig(%s): %v", doc, err)
	}
	return s
}

func TestKeyEqual(t *testing.T) {
	tests := []struct {
		name string
		a, b string
	}{
		{"identical",
			`{"server_uri": "s:1", "channel_creds": [{"type": "insecure"}]}`,
			`{"server_uri": "s:1", "channel_creds": [{"type": "insecure"}]}`},
		{"unselected creds differ",
			`{"server_uri": "s:1", "channel_creds": [{"type": "insecure"}]}`,
			`{"server_uri": "s:1", "channel_creds": [{"type": "unknown_creds"}, {"type": "insecure"}, {"type": "tls"}]}`},
		{"config whitespace and key order differ",
			`{"server_uri": "s:1", "channel_creds": [{"type": "tls", "config": {"ca_certificate_file": "ca.pem", "refresh_interval": "60s"}}]}`,
			`{"server_uri": "s:1", "channel_creds": [{"type": "tls", "config": {
				"refresh_interval":"60s",   "ca_certificate_file":"ca.pem"}}]}`},
		{"absent config equals empty config",
			`{"server_uri": "s:1", "channel_creds": [{"type": "tls"}]}`,
			`{"server_uri": "s:1", "channel_creds": [{"type": "tls", "config": {}}]}`},
		{"null config equals absent config",
			`{"server_uri": "s:1", "channel_creds": [{"type": "tls", "config": null}]}`,
			`{"server_uri": "s:1", "channel_creds": [{"type": "tls"}]}`},
		{"feature order differs",
			`{"server_uri": "s:1", "channel_creds": [{"type": "insecure"}], "server_features": ["trusted_xds_server", "fail_on_data_errors"]}`,
			`{"server_uri": "s:1", "channel_creds": [{"type": "insecure"}], "server_features": ["fail_on_data_errors", "trusted_xds_server"]}`},
		{"repeated feature",
			`{"server_uri": "s:1", "channel_creds": [{"type": "insecure"}], "server_features": ["trusted_xds_server", "trusted_xds_server"]}`,
			`{"server_uri": "s:1", "channel_creds": [{"type": "insecure"}], "server_features": ["trusted_xds_server"]}`},
		{"unknown features do not count",
			`{"server_uri": "s:1", "channel_creds": [{"type": "insecure"}], "server_features": ["xds_v3", "new_thing", 7]}`,
			`{"server_uri": "s:1", "channel_creds": [{"type": "insecure"}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b := parseServerT(t, tt.a), parseServerT(t, tt.b)
			if a.Key() != b.Key() {
				t.Errorf("keys differ:\n%s\n%s", a.Key(), b.Key())
			}
		})
	}
}

func TestKeyDiffers(t *testing.T) {
	base := `{"server_uri": "s:1", "channel_creds": [{"type": "insecure"}]}`
	tests := []struct {
		name  string
		other string
	}{
		{"URI", `{"server_uri": "s:2", "channel_creds": [{"type": "insecure"}]}`},
		{"selected type", `{"server_uri": "s:1", "channel_creds": [{"type": "tls"}]}`},
		{"selected config", `{"server_uri": "s:1", "channel_creds": [{"type": "insecure", "config": {"a": 1}}]}`},
		{"ignore_resource_deletion", `{"server_uri": "s:1", "channel_creds": [{"type": "insecure"}], "server_features": ["ignore_resource_deletion"]}`},
		{"fail_on_data_errors", `{"server_uri": "s:1", "channel_creds": [{"type": "insecure"}], "server_features": ["fail_on_data_errors"]}`},
		{"resource_timer_is_transient_error", `{"server_uri": "s:1", "channel_creds": [{"type": "insecure"}], "server_features": ["resource_timer_is_transient_error"]}`},
		{"trusted_xds_server", `{"server_uri": "s:1", "channel_creds": [{"type": "insecure"}], "server_features": ["trusted_xds_server"]}`},
		{"delta_xds", `{"server_uri": "s:1", "channel_creds": [{"type": "insecure"}], "server_features": ["delta_xds"]}`},
	}
	b := parseServerT(t, base)
	seen := map[string]string{b.Key(): "base"}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := parseServerT(t, tt.other)
			if prev, ok := seen[o.Key()]; ok {
				t.Errorf("key %s equals the key of %q", o.Key(), prev)
			}
			seen[o.Key()] = tt.name
		})
	}
	t.Run("tls configs", func(t *testing.T) {
		a := parseServerT(t, `{"server_uri": "s:1", "channel_creds": [{"type": "tls", "config": {"ca_certificate_file": "a.pem"}}]}`)
		c := parseServerT(t, `{"server_uri": "s:1", "channel_creds": [{"type": "tls", "config": {"ca_certificate_file": "b.pem"}}]}`)
		if a.Key() == c.Key() {
			t.Errorf("different CA files give equal keys %s", a.Key())
		}
	})
	t.Run("no ambiguity between fields", func(t *testing.T) {
		a := &ServerConfig{URI: "a", SelectedCreds: ChannelCreds{Type: "b c"}}
		c := &ServerConfig{URI: "a b", SelectedCreds: ChannelCreds{Type: "c"}}
		if a.Key() == c.Key() {
			t.Errorf("keys equal: %s", a.Key())
		}
	})
}

func TestKeyAcrossAuthorities(t *testing.T) {
	c := mustParse(t, `{
		"xds_servers": [{"server_uri": "shared:443", "channel_creds": [{"type": "tls", "config": {"ca_certificate_file": "/ca.pem"}}],
			"server_features": ["trusted_xds_server", "xds_v3"]}],
		"authorities": {
			"a": {"xds_servers": [{"server_uri": "shared:443", "channel_creds": [{"type": "unknown_creds"}, {"type": "tls", "config": {"ca_certificate_file":"/ca.pem"}}],
				"server_features": ["trusted_xds_server"]}]},
			"b": {"xds_servers": [{"server_uri": "shared:443", "channel_creds": [{"type": "tls", "config": {"ca_certificate_file": "/ca.pem"}}]}]}
		}}`)
	top, a, b := c.Servers[0], c.Authorities["a"].Servers[0], c.Authorities["b"].Servers[0]
	if top.Key() != a.Key() {
		t.Errorf("equal servers in different places have different keys:\n%s\n%s", top.Key(), a.Key())
	}
	if top.Key() == b.Key() {
		t.Errorf("servers with different features have equal keys %s", b.Key())
	}
}

func TestKeyFollowsFeatureFields(t *testing.T) {
	parsed := parseServerT(t, `{"server_uri": "s:1", "channel_creds": [{"type": "insecure"}], "server_features": ["fail_on_data_errors"]}`)
	built := &ServerConfig{URI: "s:1", SelectedCreds: ChannelCreds{Type: "insecure"}, FailOnDataErrors: true}
	if parsed.Key() != built.Key() {
		t.Errorf("keys differ:\n%s\n%s", parsed.Key(), built.Key())
	}
}

func TestKeyWithConfigThatIsNotJSON(t *testing.T) {
	s := &ServerConfig{URI: "s:1", SelectedCreds: ChannelCreds{Type: "tls", Config: json.RawMessage(`{not json`)}}
	other := &ServerConfig{URI: "s:1", SelectedCreds: ChannelCreds{Type: "tls"}}
	if s.Key() == "" || s.Key() == other.Key() {
		t.Errorf("Key() = %q, other %q", s.Key(), other.Key())
	}
}

func TestKeyIsReadable(t *testing.T) {
	s := parseServerT(t, `{"server_uri": "xds.example.com:443", "channel_creds": [{"type": "tls", "config": {"b": 1, "a": "x"}}],
		"server_features": ["trusted_xds_server", "fail_on_data_errors", "xds_v3"]}`)
	want := `["xds.example.com:443","tls",{"a":"x","b":1},["fail_on_data_errors","trusted_xds_server"]]`
	if s.Key() != want {
		t.Errorf("Key() = %s, want %s", s.Key(), want)
	}
	if s.String() != "xds.example.com:443" {
		t.Errorf("String() = %q", s.String())
	}
}
