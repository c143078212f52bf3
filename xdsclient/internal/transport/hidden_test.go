package transport

import (
	"strings"
	"testing"

	"google.golang.org/grpc/resolver"

	"github.com/xdslens/xdslens/xdsclient/bootstrap"
)

// A server URI that hides nothing is dialled as written; one with user
// info, a query or a fragment is dialled as shown, under hiddenScheme,
// with the authority gRPC gives the URI as written, less its user info.
func TestDialTarget(t *testing.T) {
	for _, tc := range []struct {
		uri, target, authority string
	}{
		{"127.0.0.1:443", "127.0.0.1:443", ""},
		{"dns:///xds.example.com:443", "dns:///xds.example.com:443", ""},
		{"dns:///xds.example.com:443?token=s3cret", "xdslens-xds-server:///dns:///xds.example.com:443?[redacted]", "xds.example.com:443"},
		{"dns:///user:s3cret@xds.example.com:443", "xdslens-xds-server:///dns:///[redacted]@xds.example.com:443", "xds.example.com:443"},
		{"passthrough://user:s3cret@/127.0.0.1:443#s3cret", "xdslens-xds-server:///passthrough://[redacted]@/127.0.0.1:443#[redacted]", "127.0.0.1:443"},
		{"passthrough:///:443?token=s3cret", "xdslens-xds-server:///passthrough:///:443?[redacted]", "localhost:443"},
		{"unix:///run/xds.sock?token=s3cret", "xdslens-xds-server:///unix:///run/xds.sock?[redacted]", "localhost"},
		{"xds.example.com:443?token=s3cret", "xdslens-xds-server:///xds.example.com:443?[redacted]", "xds.example.com:443"},
	} {
		s := &bootstrap.ServerConfig{URI: tc.uri}
		target, opts, err := dialTarget(s)
		if err != nil {
			t.Errorf("%s: %v", tc.uri, err)
			continue
		}
		if target != tc.target {
			t.Errorf("%s: dialled as %q, want %q", tc.uri, target, tc.target)
		}
		if tc.authority == "" {
			if len(opts) != 0 {
				t.Errorf("%s: %d dial options, want none", tc.uri, len(opts))
			}
			continue
		}
		h, err := hiddenResolver(tc.uri)
		if err != nil {
			t.Fatal(err)
		}
		if got := h.OverrideAuthority(resolver.Target{}); got != tc.authority {
			t.Errorf("%s: authority %q, want %q", tc.uri, got, tc.authority)
		}
		if strings.Contains(target, "s3cret") {
			t.Errorf("%s: the target dialled shows the secret: %s", tc.uri, target)
		}
	}
}
