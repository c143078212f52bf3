package xdscreds_test

import (
	"context"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/xdslens/xdslens/xdsclient/xdsresource/matcher"
	"github.com/xdslens/xdslens/xdsclient/xdsresource/security"

	"github.com/xdslens/xdslens/xdscreds"
)

// TestConcurrentHandshakes: handshakes made at once with the endpoints of
// two clusters, each cluster's settings compiled once and shared by all
// its handshakes, one cluster with a safe_regex that the server's SPIFFE
// ID matches and one with a regex that it does not: each handshake
// decides by its own cluster's matchers. Run with -race, it checks that
// the compiled matchers are safe to share.
func TestConcurrentHandshakes(t *testing.T) {
	p, store, _ := rootsSetup(t)
	b := startTLS(t, backendConfig{cert: p.server, raw: true})
	regex := func(expr string) *security.Config {
		return &security.Config{RootInstance: "roots", SANMatchers: []matcher.String{
			exact("nope.example.com"),
			match(matcher.Regex, expr, false),
		}}
	}
	server := info(t, store, regex(`spiffe://example\.org/ns/[a-z]+/sa/server`))
	client := info(t, store, regex(`spiffe://example\.org/ns/[a-z]+/sa/client`))
	ctx := context.Background()
	const n = 32
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		in := server
		if i%2 == 1 {
			in = client
		}
		wg.Go(func() {
			raw, err := net.Dial("tcp", b.addr)
			if err != nil {
				errs[i] = err
				return
			}
			conn, err := xdscreds.HandshakeWith(ctx, in, raw)
			if err != nil {
				raw.Close()
				errs[i] = err
				return
			}
			conn.Close()
		})
	}
	wg.Wait()
	for i, err := range errs {
		switch {
		case i%2 == 0 && err != nil:
			t.Errorf("handshake %d, whose regex the server matches: %v", i, err)
		case i%2 == 1 && (err == nil || !strings.Contains(err.Error(), `matches match_subject_alt_names [exact "nope.example.com" safe_regex "spiffe://example\\.org/ns/[a-z]+/sa/client"]`)):
			t.Errorf("handshake %d, whose regex the server does not match: %v, want a SAN mismatch naming its matchers", i, err)
		}
	}
}
