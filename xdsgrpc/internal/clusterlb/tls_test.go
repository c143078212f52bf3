package clusterlb_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"

	"github.com/xdslens/xdslens/internal/certstore"
	"github.com/xdslens/xdslens/xdsclient/bootstrap"
	"github.com/xdslens/xdslens/xdsclient/xdsresource/matcher"
	"github.com/xdslens/xdslens/xdsclient/xdsresource/security"
)

// TestTLSSettingsThatDoNotCompile: a cluster whose UpstreamTlsContext
// cannot be compiled (a SAN regex that is not valid: parsing NACKs such a
// Cluster, so only a Config made by hand has one) fails its RPCs
// UNAVAILABLE, wait-for-ready or not, naming the cluster and the matcher,
// and its endpoint, which serves plaintext, gets nothing.
func TestTLSSettingsThatDoNotCompile(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	b := startBackend(t, "plain")
	store := certstore.New(&bootstrap.Config{})
	t.Cleanup(store.Close)
	leaf := edsCluster("secure", locality("z", 0, 1, b))
	leaf.Cluster.Security = &security.Config{RootInstance: "roots", SANMatchers: []matcher.String{{Kind: matcher.Regex, Value: "("}}}
	cfg := config("secure", leaf)
	cfg.Certificates = store
	c := dial(t, cfg)
	for _, wfr := range []bool{false, true} {
		name, err := c.call(ctx, grpc.WaitForReady(wfr))
		got, msg := code(err)
		if got != codes.Unavailable || !strings.Contains(msg, `cluster "secure"`) || !strings.Contains(msg, `match_subject_alt_names[0]: safe_regex "(": invalid regex`) || !strings.Contains(msg, "not sent in plaintext") {
			t.Errorf("wait-for-ready %v: RPC answered by %q: %v; want UNAVAILABLE naming the cluster and its matcher", wfr, name, err)
		}
	}
}
