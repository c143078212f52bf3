package bootstrap

import (
	"testing"
	"time"
)

func fileWatcherDoc(config string) string {
	return withServers(`"certificate_providers": {"p": {"plugin_name": "file_watcher", "config": ` + config + `}}`)
}

func TestParseFileWatcher(t *testing.T) {
	tests := []struct {
		name, config string
		want         FileWatcherConfig
	}{
		{"identity only", `{"certificate_file": "/c/cert.pem", "private_key_file": "/c/key.pem"}`,
			FileWatcherConfig{CertificateFile: "/c/cert.pem", PrivateKeyFile: "/c/key.pem", RefreshInterval: DefaultFileWatcherRefreshInterval}},
		{"roots only", `{"ca_certificate_file": "/ca.pem", "refresh_interval": "1.5s"}`,
			FileWatcherConfig{CACertificateFile: "/ca.pem", RefreshInterval: 1500 * time.Millisecond}},
		{"all", `{"certificate_file": "c.pem", "private_key_file": "k.pem", "ca_certificate_file": "/ca.pem", "unknown": 1}`,
			FileWatcherConfig{CertificateFile: "c.pem", PrivateKeyFile: "k.pem", CACertificateFile: "/ca.pem", RefreshInterval: DefaultFileWatcherRefreshInterval}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse([]byte(fileWatcherDoc(tt.config)))
			if err != nil {
				t.Fatal(err)
			}
			got := c.CertificateProviders["p"].FileWatcher
			if got == nil || *got != tt.want {
				t.Errorf("FileWatcher = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestParseFileWatcherErrors(t *testing.T) {
	tests := []struct{ name, config, want string }{
		{"no config", `null`,
			`xds bootstrap: certificate_providers["p"].config: none of certificate_file, private_key_file and ca_certificate_file is set`},
		{"no files", `{"refresh_interval": "1s"}`,
			`xds bootstrap: certificate_providers["p"].config: none of certificate_file, private_key_file and ca_certificate_file is set`},
		{"cert without key", `{"certificate_file": "/c/cert.pem"}`,
			`xds bootstrap: certificate_providers["p"].config.private_key_file: must be set because certificate_file is "/c/cert.pem"`},
		{"key without cert", `{"private_key_file": "/c/key.pem", "ca_certificate_file": "/ca.pem"}`,
			`xds bootstrap: certificate_providers["p"].config.certificate_file: must be set because private_key_file is "/c/key.pem"`},
		{"cert and key apart", `{"certificate_file": "/a/cert.pem", "private_key_file": "/b/key.pem"}`,
			`xds bootstrap: certificate_providers["p"].config.private_key_file: "/b/key.pem" is not in the directory of certificate_file "/a/cert.pem"`},
		{"file not a string", `{"ca_certificate_file": 1}`,
			`xds bootstrap: certificate_providers["p"].config.ca_certificate_file: want a string, got 1`},
		{"bad refresh", `{"ca_certificate_file": "/ca.pem", "refresh_interval": "soon"}`,
			`xds bootstrap: certificate_providers["p"].config.refresh_interval: "soon" is not a duration such as "600s"`},
		{"zero refresh", `{"ca_certificate_file": "/ca.pem", "refresh_interval": "0s"}`,
			`xds bootstrap: certificate_providers["p"].config.refresh_interval: "0s" is not positive`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse([]byte(fileWatcherDoc(tt.config)))
			if err == nil {
				t.Fatalf("Parse = %+v, want error %q", c, tt.want)
			}
			if got := err.Error(); got != tt.want {
				t.Errorf("error\n got: %s\nwant: %s", got, tt.want)
			}
		})
	}
}

func TestParseUnknownPluginUnchecked(t *testing.T) {
	c, err := Parse([]byte(withServers(`"certificate_providers": {"p": {"plugin_name": "meshca", "config": {"anything": true}}}`)))
	if err != nil {
		t.Fatal(err)
	}
	if p := c.CertificateProviders["p"]; p.PluginName != "meshca" || p.FileWatcher != nil {
		t.Errorf("provider = %+v, want meshca without FileWatcher", p)
	}
}
