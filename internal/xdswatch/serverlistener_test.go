package xdswatch

import (
	"encoding/json"
	"testing"

	"github.com/xdslens/xdslens/internal/xdswatch/demo/controlplane"
)

// TestServerListenerTemplatedName watches the Listener of an xDS-enabled
// server by the name that server_listener_resource_name_template gives
// it, with the query and the colons in the name, in both output modes.
func TestServerListenerTemplatedName(t *testing.T) {
	t.Parallel()
	const name = "grpc/server?xds.resource.listening_address=127.0.0.1:8443"
	cp := startControlPlane(t,
		controlplane.ServerListener(name, "127.0.0.1", 8443, "r1"),
		controlplane.RouteConfig("r1", []string{"*"}, "c1"))

	p := startRun(t, "--bootstrap", cp.bootstrapFile, "--output", "json", "lds:"+name)
	p.listening(t)
	e := p.event(t)
	if e.Event != eventResource || e.Type != "lds" || e.Name != name || e.Version != "1" {
		t.Fatalf("got %v, want resource lds %s v1", e, name)
	}
	var msg struct {
		Name    string `json:"name"`
		Address struct {
			SocketAddress struct {
				Address   string `json:"address"`
				PortValue int    `json:"portValue"`
			} `json:"socketAddress"`
		} `json:"address"`
	}
	if err := json.Unmarshal(e.Resource, &msg); err != nil {
		t.Fatal(err)
	}
	if msg.Name != name || msg.Address.SocketAddress.Address != "127.0.0.1" || msg.Address.SocketAddress.PortValue != 8443 {
		t.Errorf("resource = %s, want the server listener on 127.0.0.1:8443", e.Resource)
	}
	p.interrupt(t)

	text := startRun(t, "--bootstrap", cp.bootstrapFile, "lds:"+name)
	const want = "lds " + name + " v1: server listener " + name + ": 127.0.0.1:8443, 1 filter chain"
	if l := text.line(t); len(l) < 13 || l[13:] != want {
		t.Errorf("text line = %q, want a time then %q", l, want)
	}
	text.interrupt(t)
}
