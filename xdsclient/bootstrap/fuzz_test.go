package bootstrap

import (
	"strings"
	"testing"
)

// FuzzParse feeds Parse arbitrary documents. Whatever the input, it must
// not panic; an error is one line naming the bootstrap; and a document it
// accepts must be usable: it has servers, every old-style name is served,
// and every authority's client listener name is served by that authority.
func FuzzParse(f *testing.F) {
	for _, doc := range []string{
		federationDoc,
		withServers(`"node": {"id": "n", "cluster": "c", "locality": {"zone": "z"}, "metadata": {"k": [1, "v"]}}`),
		withServers(`"server_listener_resource_name_template": "grpc/server?xds.resource.listening_address=%s"`),
		withServers(`"certificate_providers": {"p": {"plugin_name": "file_watcher", "config": {"certificate_file": "/c", "private_key_file": "/k", "ca_certificate_file": "/ca", "refresh_interval": "60s"}}}`),
		serverDoc(`{"server_uri": "s:1", "channel_creds": [{"type": "google_default"}, {"type": "insecure"}], "server_features": ["xds_v3", "ignore_resource_deletion", "fail_on_data_errors"]}`),
		credsDoc(`[{"type": "tls", "config": {"ca_certificate_file": "/ca"}}]`),
		`{"xds_servers": [}`, `[]`, ``, `null`,
	} {
		f.Add([]byte(doc))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		c, err := Parse(doc)
		if err != nil {
			if msg := err.Error(); !strings.HasPrefix(msg, "xds bootstrap: ") || len(msg) > maxMessage {
				t.Fatalf("error %q does not start with the bootstrap prefix or is too long", msg)
			}
			return
		}
		if len(c.Servers) == 0 {
			t.Fatalf("accepted a bootstrap with no servers: %s", doc)
		}
		for _, s := range c.Servers {
			if s.URI == "" {
				t.Fatalf("accepted a server with no URI: %s", doc)
			}
		}
		if got, err := c.ServersFor("old-style"); err != nil || len(got) != len(c.Servers) {
			t.Fatalf("ServersFor(old-style) = %v, %v", got, err)
		}
		for name := range c.Authorities {
			l, err := c.ClientListenerResourceName(name, "host")
			if err != nil {
				t.Fatalf("authority %q: ClientListenerResourceName: %v", name, err)
			}
			if servers, err := c.ServersFor(l); err != nil || len(servers) == 0 {
				t.Fatalf("authority %q: listener %q is served by %v, %v", name, l, servers, err)
			}
		}
	})
}
