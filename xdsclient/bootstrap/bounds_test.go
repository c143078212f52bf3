package bootstrap

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// huge is a string of the bootstrap far over every bound: 64 KiB (the
// RPC test of package xdsgrpc has one of 3 MiB).
var huge = strings.Repeat("h", 64<<10)

// q is s as a JSON string.
func q(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// Every error of the package, whatever the bootstrap holds, is at most
// maxMessage bytes, each string of the bootstrap it quotes at most
// maxQuoted, each cut marked, and it still says where the problem is.
func TestErrorsBounded(t *testing.T) {
	manyTypes := make([]string, 200)
	for i := range manyTypes {
		manyTypes[i] = `{"type": ` + q(strings.Repeat("t", 1<<10)) + `}`
	}
	for _, tc := range []struct {
		name, doc string
		// where is what the error must still say.
		where string
	}{
		{"unknown channel_creds type", credsDoc(`[{"type": ` + q(huge) + `}]`), "xds_servers[0].channel_creds: no supported type among"},
		{"many unknown channel_creds types", credsDoc("[" + strings.Join(manyTypes, ", ") + "]"), "no supported type among"},
		{"authority name", withServers(`"authorities": {` + q(huge) + `: {"client_listener_resource_name_template": "x"}}`), "client_listener_resource_name_template"},
		{"listener template", withServers(`"authorities": {"a": {"client_listener_resource_name_template": ` + q(huge) + `}}`), `does not start with "xdstp://a/"`},
		{"certificate provider name", withServers(`"certificate_providers": {` + q(huge) + `: {"plugin_name": ""}}`), "plugin_name: empty"},
		{"certificate file without key", withServers(`"certificate_providers": {"p": {"plugin_name": "file_watcher", "config": {"certificate_file": ` + q(huge) + `}}}`), "private_key_file: must be set because certificate_file is"},
		{"tls certificate file without key", credsDoc(`[{"type": "tls", "config": {"certificate_file": ` + q(huge) + `}}]`), "private_key_file: must be set"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.doc))
			checkBounded(t, err, tc.where)
		})
	}
}

// checkBounded fails t unless err is a bounded error that says where.
func checkBounded(t *testing.T, err error, where string) {
	t.Helper()
	if err == nil {
		t.Fatal("no error")
	}
	msg := err.Error()
	if len(msg) > maxMessage || !strings.Contains(msg, " more") {
		t.Errorf("error of %d bytes, %q...%q", len(msg), msg[:min(len(msg), 200)], msg[max(0, len(msg)-100):])
	}
	if !strings.Contains(msg, where) {
		t.Errorf("error %.300q does not say %q", msg, where)
	}
	if strings.Contains(msg, strings.Repeat("h", maxQuoted+1)) {
		t.Errorf("error %.200q quotes more than %d bytes of a string", msg, maxQuoted)
	}
}

// The errors of a file, of the environment, of one server's config and of
// credentials are bounded too, and keep what they wrap.
func TestFileEnvAndCredentialsErrorsBounded(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bootstrap.json")
	if err := os.WriteFile(bad, []byte(credsDoc(`[{"type": `+q(huge)+`}]`)), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := ParseFile(bad)
	checkBounded(t, err, "no supported type among")
	var fe *fieldError
	if !errors.As(err, &fe) {
		t.Errorf("the bounded error does not wrap the field error: %v", err)
	}

	t.Setenv(EnvBootstrapFile, bad)
	_, err = FromEnv()
	checkBounded(t, err, EnvBootstrapFile)
	t.Setenv(EnvBootstrapFile, "")
	t.Setenv(EnvBootstrapConfig, credsDoc(`[{"type": `+q(huge)+`}]`))
	_, err = FromEnv()
	checkBounded(t, err, EnvBootstrapConfig)

	_, err = ParseServerConfig([]byte(`{"server_uri": "s:1", "channel_creds": [{"type": ` + q(huge) + `}]}`))
	checkBounded(t, err, "xds server config: channel_creds")

	// A file name too long to open, in a path, in a TLS config.
	long := filepath.Join(dir, strings.Repeat("h", 4<<10))
	_, err = ParseFile(long)
	checkBounded(t, err, "xds bootstrap file")
	s := &ServerConfig{URI: "s:1", SelectedCreds: ChannelCreds{Type: CredsTLS, Config: json.RawMessage(`{"ca_certificate_file": ` + q(long) + `}`)}}
	_, err = s.DialOptions()
	checkBounded(t, err, `server "s:1": tls channel creds: ca_certificate_file`)
	s = &ServerConfig{URI: "s:1", SelectedCreds: ChannelCreds{Type: huge}}
	_, err = s.TransportCredentials()
	checkBounded(t, err, "is not supported")
}
