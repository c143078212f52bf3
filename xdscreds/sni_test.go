package xdscreds_test

import (
	"testing"

	"github.com/xdslens/xdslens/xdsclient/xdsresource/security"
)

// TestServerName: the server name sent in the ClientHello (gRFC A101):
// the endpoint's hostname with auto_host_sni, else sni, else none.
func TestServerName(t *testing.T) {
	_, store, b := rootsSetup(t)
	tests := []struct {
		name string
		sc   security.Config
		host string
		want string
	}{
		{"none", security.Config{}, "host.example.com:443", ""},
		{"sni", security.Config{SNI: "api.example.com"}, "host.example.com:443", "api.example.com"},
		{"auto_host_sni: the hostname without its port", security.Config{SNI: "api.example.com", AutoHostSNI: true}, "host.example.com:8443", "host.example.com"},
		{"auto_host_sni: a hostname without a port", security.Config{AutoHostSNI: true}, "plain.example.com", "plain.example.com"},
		{"auto_host_sni without a hostname: sni", security.Config{SNI: "api.example.com", AutoHostSNI: true}, "", "api.example.com"},
		{"auto_host_sni without a hostname or sni: none", security.Config{AutoHostSNI: true}, "", ""},
		{"an IP address is not sent", security.Config{AutoHostSNI: true}, "[::1]:443", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sc := tt.sc
			sc.RootInstance = "roots"
			in := info(t, store, &sc)
			in.Hostname = tt.host
			before := len(b.serverNames())
			if err := check(t, dial(t, newCreds(t), b.addr, in)); err != nil {
				t.Fatalf("RPC = %v, want OK", err)
			}
			got := b.serverNames()[before:]
			if len(got) != 1 || got[0] != tt.want {
				t.Errorf("server names sent: %q, want [%q]", got, tt.want)
			}
		})
	}
}
