package xdsserver_test

import (
	"fmt"
	"net"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/grpc/codes"

	"github.com/xdslens/xdslens/internal/testing/servertest"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/serverres"
	"github.com/xdslens/xdslens/xdsserver"
)

func matchSourcePrefix(addr string, bits uint32) *listenerv3.FilterChainMatch {
	return &listenerv3.FilterChainMatch{SourcePrefixRanges: []*corev3.CidrRange{serverres.CIDR(addr, bits)}}
}

// freePort returns a port nothing listens on at 127.0.0.1.
func freePort(t *testing.T) int {
	lis := servertest.Listen(t)
	defer lis.Close()
	return lis.Addr().(*net.TCPAddr).Port
}

// Connections are served by the chain that matches them: by source
// address and port and by destination, the most specific winning, else
// the default chain, else none.
func TestFilterChainSelection(t *testing.T) {
	env := servertest.NewEnv(t, servertest.Options{})
	s := serve(t, env.Pool())
	port := freePort(t)
	hcm := func(prefix string) *hcmv3.HttpConnectionManager {
		return serverres.InlineHCM(serverres.Routes("r", serverres.Serve(prefix)))
	}
	chains := []*listenerv3.FilterChain{
		serverres.Chain("from-127.0.0.2", matchSourcePrefix("127.0.0.2", 32), hcm("/"), nil),
		serverres.Chain("from-127.0.0.0/8", matchSourcePrefix("127.0.0.0", 8), hcm(emptyCall), nil),
		serverres.Chain("from-127.0.0.3-port", &listenerv3.FilterChainMatch{
			SourcePrefixRanges: []*corev3.CidrRange{serverres.CIDR("127.0.0.3", 32)}, SourcePorts: []uint32{uint32(port)},
		}, hcm("/"), nil),
		serverres.Chain("to-10/8", &listenerv3.FilterChainMatch{PrefixRanges: []*corev3.CidrRange{serverres.CIDR("10.0.0.0", 8)}}, hcm("/"), nil),
	}
	env.Set(serverres.Listener(s.name(), s.host, s.port, nil, chains...))
	waitMode(t, s, xdsserver.ModeServing, "")
	ctx := ctxT(t)
	for _, tc := range []struct {
		from  string
		chain string // "" for a connection no chain serves
	}{
		{"127.0.0.2:0", "from-127.0.0.2"},
		{"127.0.0.1:0", "from-127.0.0.0/8"},
		{fmt.Sprintf("127.0.0.3:%d", port), "from-127.0.0.3-port"},
		// The most specific source prefix, 127.0.0.3/32, is kept before
		// ports are looked at: no backtracking to 127.0.0.0/8.
		{"127.0.0.3:0", ""},
	} {
		accepted, refused := s.ev.counts()
		err := servertest.Call(ctx, s.plaintext(t, fromLocal(tc.from)), emptyCall)
		if tc.chain == "" {
			s.ev.wait(t, "a refused connection from "+tc.from, func(e *events) bool { return len(e.refused) > refused })
			if err == nil {
				t.Errorf("from %s: served, want refused", tc.from)
			}
			continue
		}
		if err != nil {
			t.Errorf("from %s: %v", tc.from, err)
			continue
		}
		s.ev.mu.Lock()
		got := s.ev.conns[accepted].Chain
		s.ev.mu.Unlock()
		if got != tc.chain {
			t.Errorf("from %s: chain %q, want %q", tc.from, got, tc.chain)
		}
	}
	// The chain from 127.0.0.0/8 serves EmptyCall alone.
	if code := callCode(t, ctx, s, unaryCall); code != codes.Unavailable {
		t.Errorf("UnaryCall on chain from-127.0.0.0/8: %v, want UNAVAILABLE", code)
	}

	// Only chains for other destinations: connections are refused, until
	// a default chain serves them.
	env.Set(serverres.Listener(s.name(), s.host, s.port, nil, chains[3]))
	s.ev.wait(t, "the Listener without a chain for loopback", func(e *events) bool { return len(e.changes) == 2 })
	if code := callCode(t, ctx, s, emptyCall); code == codes.OK {
		t.Error("a connection no chain matches was served")
	}
	s.ev.wait(t, "a connection without a chain refused", func(e *events) bool {
		return len(e.refused) > 0 && !e.refused[len(e.refused)-1].NotServing
	})
	env.Set(serverres.Listener(s.name(), s.host, s.port, serverres.Chain("default", nil, hcm("/"), nil), chains[3]))
	s.ev.wait(t, "the Listener with a default chain", func(e *events) bool { return len(e.changes) == 3 })
	before, _ := s.ev.counts()
	if err := servertest.Call(ctx, s.plaintext(t), emptyCall); err != nil {
		t.Fatalf("on the default chain: %v", err)
	}
	s.ev.mu.Lock()
	defer s.ev.mu.Unlock()
	for _, c := range s.ev.conns[before:] {
		if c.Chain != "default" || !c.DefaultChain {
			t.Errorf("connection on %+v, want the default chain", c)
		}
	}
}
