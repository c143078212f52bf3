package compare_test

import (
	"testing"
	"time"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"

	"github.com/xdslens/xdslens/internal/testing/servertest"
	"github.com/xdslens/xdslens/internal/testing/xdstest"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/serverres"
)

const (
	emptyCall   = "/grpc.testing.TestService/EmptyCall"
	unaryCall   = "/grpc.testing.TestService/UnaryCall"
	healthCheck = "/grpc.health.v1.Health/Check"
)

// plainListener serves every method on one plaintext chain.
func plainListener(t *testing.T) listenerFunc {
	return func(_ int, name, addr string) *listenerv3.Listener {
		host, port := servertest.HostPort(t, addr)
		return serverres.Listener(name, host, port, nil,
			serverres.Chain("plain", nil, serverres.InlineHCM(serverres.Routes("r", serverres.Serve("/"))), nil))
	}
}

// nackedListener is plainListener with a chain both clients reject (two
// network filters).
func nackedListener(t *testing.T) listenerFunc {
	return func(side int, name, addr string) *listenerv3.Listener {
		l := plainListener(t)(side, name, addr)
		l.FilterChains[0].Filters = append(l.FilterChains[0].Filters, l.FilterChains[0].Filters[0])
		return l
	}
}

// waitCached waits until xdslens's client holds its Listener in state.
func (p *servedPair) waitCached(t *testing.T, state string) {
	t.Helper()
	deadline := time.Now().Add(xdstest.Timeout)
	for time.Now().Before(deadline) {
		for _, c := range p.pool.Clients() {
			for _, e := range c.Dump() {
				if e.Name == p.names[ours] && e.State.String() == state {
					return
				}
			}
		}
		time.Sleep(10 * time.Millisecond) // the cache has no notification to wait on here
	}
	t.Fatalf("xdslens's Listener did not reach %s", state)
}

// steady checks for a while that both servers keep answering OK: what an
// ambient error must leave as it is.
func (p *servedPair) steady(t *testing.T, what string) {
	t.Helper()
	for range 5 {
		if got := p.both(t, plaintext, "", emptyCall); got != "OK" {
			t.Errorf("%s: both answer %s, want OK", what, got)
		}
		time.Sleep(50 * time.Millisecond) // the window in which a change would show
	}
}

// Serving modes under gRFC A36 and A88's rows for a Listener, side by
// side: missing, NACKed without a Listener cached, valid, NACKed and
// deleted with one cached, restored.
func TestSideBySideServingModes(t *testing.T) {
	t.Parallel() // waits for grpc-go's 15s does-not-exist timer
	t.Run("missing, then valid", func(t *testing.T) {
		t.Parallel()
		p := newServedPair(t, servertest.Options{})
		p.set(func(int, string, string) *listenerv3.Listener { return nil }) // LDS without the Listeners
		p.waitModes(t, "NOT_SERVING", 30*time.Second)
		if got := p.both(t, plaintext, "", emptyCall); got != "Unavailable" {
			t.Errorf("not serving: both answer %s, want Unavailable (the connection refused)", got)
		}
		p.set(plainListener(t))
		p.waitModes(t, "SERVING", xdstest.Timeout)
		p.eventually(t, "OK", plaintext, emptyCall)
	})
	t.Run("NACKed, nothing cached", func(t *testing.T) {
		t.Parallel()
		p := newServedPair(t, servertest.Options{})
		p.set(nackedListener(t))
		p.waitModes(t, "NOT_SERVING", xdstest.Timeout)
		p.set(plainListener(t))
		p.waitModes(t, "SERVING", xdstest.Timeout)
	})
	t.Run("NACKed and deleted, cached", func(t *testing.T) {
		t.Parallel()
		p := newServedPair(t, servertest.Options{})
		p.set(plainListener(t))
		p.waitModes(t, "SERVING", xdstest.Timeout)
		p.eventually(t, "OK", plaintext, emptyCall)
		p.set(nackedListener(t))
		p.waitCached(t, "NACKED")
		p.steady(t, "after a NACK")
		// A deliberate difference: gRFC A88 keeps a cached Listener that
		// the control plane deletes (an ambient NOT_FOUND) unless the xDS
		// server has fail_on_data_errors, so xdslens keeps serving;
		// grpc-go, which has no fail_on_data_errors, stops serving, as
		// before gRFC A88.
		p.set(func(int, string, string) *listenerv3.Listener { return nil })
		p.waitCached(t, "DOES_NOT_EXIST")
		if got := p.call(t, ours, plaintext, "", emptyCall); got != "OK" {
			t.Errorf("xdslens after a deletion: %s, want OK (A88: the cached Listener is kept)", got)
		}
		deadline := time.Now().Add(xdstest.Timeout)
		for p.call(t, theirs, plaintext, "", emptyCall) == "OK" && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond) // the deletion reaches grpc-go's server asynchronously
		}
		if got := p.call(t, theirs, plaintext, "", emptyCall); got != "Unavailable" {
			t.Errorf("grpc-go after a deletion: %s, want Unavailable (if grpc-go now keeps the Listener, this difference is gone)", got)
		}
		p.set(plainListener(t))
		p.waitModes(t, "SERVING", xdstest.Timeout)
		p.eventually(t, "OK", plaintext, emptyCall)
		p.mu.Lock()
		defer p.mu.Unlock()
		if ms := p.modes[ours]; len(ms) != 1 || ms[0] != "SERVING" {
			t.Errorf("xdslens reported serving modes %v, want SERVING once", ms)
		}
		if ms := p.modes[theirs]; len(ms) != 3 || ms[1] != "NOT_SERVING" {
			t.Errorf("grpc-go reported serving modes %v, want SERVING, NOT_SERVING (the deletion), SERVING", ms)
		}
	})
}

// A deliberate difference: a server's validation context without roots.
// xdslens accepts it and asks for no client certificate, as gRPC C-core
// does; grpc-go rejects the Listener.
func TestSideBySideValidationContextWithoutRoots(t *testing.T) {
	t.Parallel()
	p := newServedPair(t, servertest.Options{})
	p.set(func(_ int, name, addr string) *listenerv3.Listener {
		host, port := servertest.HostPort(t, addr)
		tls := serverres.TLS(servertest.Provider, "", false)
		tls.CommonTlsContext.ValidationContextType = &tlsv3.CommonTlsContext_ValidationContext{ValidationContext: &tlsv3.CertificateValidationContext{}}
		return serverres.Listener(name, host, port, nil,
			serverres.Chain("tls", nil, serverres.InlineHCM(serverres.Routes("r", serverres.Serve("/"))), tls))
	})
	p.waitMode(t, ours, "SERVING")
	p.waitMode(t, theirs, "NOT_SERVING")
	creds := p.env.ClientTLS(nil)
	for side, want := range []string{"OK", "Unavailable"} {
		if got := p.call(t, side, creds, "", emptyCall); got != want {
			t.Errorf("%s: a TLS client without a certificate: %s, want %s", sideNames[side], got, want)
		}
	}
}
