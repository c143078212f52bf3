package xdsserver_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/xdslens/xdslens/internal/testing/servertest"
	"github.com/xdslens/xdslens/internal/testing/xdstest"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/controlplane"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/serverres"
	"github.com/xdslens/xdslens/xdsclient"
	"github.com/xdslens/xdslens/xdsserver"
)

const emptyCall = "/grpc.testing.TestService/EmptyCall"

// callCode makes an RPC with a short deadline and returns its code.
func callCode(t *testing.T, ctx context.Context, s *served, method string, md ...string) codes.Code {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	return status.Code(servertest.Call(ctx, s.plaintext(t), method, md...))
}

func TestServesOnceTheListenerComes(t *testing.T) {
	env := servertest.NewEnv(t, servertest.Options{})
	s := serve(t, env.Pool())
	ctx := ctxT(t)
	// No Listener yet: connections are closed as they come.
	if code := callCode(t, ctx, s, emptyCall); code != codes.Unavailable && code != codes.DeadlineExceeded {
		t.Errorf("before the Listener: %v, want the connection refused", code)
	}
	s.ev.wait(t, "a refused connection", func(e *events) bool { return len(e.refused) > 0 })
	env.Set(serverres.Listener(s.name(), s.host, s.port, nil,
		serverres.Chain("c1", nil, serverres.InlineHCM(serverres.Routes("r", serverres.Serve("/"))), nil)))
	s.ev.wait(t, "SERVING", func(e *events) bool { return e.lastMode().Mode == xdsserver.ModeServing })
	if code := callCode(t, ctx, s, emptyCall); code != codes.OK {
		t.Errorf("once serving: %v, want OK", code)
	}
}

// servingListener is a valid Listener for s: one chain that serves every
// method, with an inline route configuration.
func servingListener(s *served) *listenerv3.Listener {
	return serverres.Listener(s.name(), s.host, s.port, nil,
		serverres.Chain("c1", nil, serverres.InlineHCM(serverres.Routes("r", serverres.Serve("/"))), nil))
}

// nackedListener is the Listener of s with a filter chain the client
// rejects (two network filters).
func nackedListener(s *served) *listenerv3.Listener {
	l := servingListener(s)
	l.FilterChains[0].Filters = append(l.FilterChains[0].Filters, l.FilterChains[0].Filters[0])
	return l
}

func waitMode(t *testing.T, s *served, m xdsserver.Mode, errHas string) xdsserver.ServingModeChange {
	t.Helper()
	s.ev.wait(t, m.String()+" with "+errHas, func(e *events) bool {
		c := e.lastMode()
		return c.Mode == m && (errHas == "" || c.Err != nil && strings.Contains(c.Err.Error(), errHas))
	})
	s.ev.mu.Lock()
	defer s.ev.mu.Unlock()
	return s.ev.lastMode()
}

// Each row of gRFC A88's table for a server's Listener: what the server
// does with it.
func TestServingModesA88(t *testing.T) {
	t.Run("missing", func(t *testing.T) {
		env := servertest.NewEnv(t, servertest.Options{})
		s := serve(t, env.Pool(xdsclient.WithResourceTimeout(200*time.Millisecond)))
		env.Set() // answers LDS without the Listener
		c := waitMode(t, s, xdsserver.ModeNotServing, "does not exist")
		if status.Code(c.Err) != codes.Unavailable || !strings.Contains(c.Err.Error(), s.name()) || c.Address != s.addr || c.Listener != s.name() {
			t.Errorf("NOT_SERVING change %+v, want UNAVAILABLE naming the Listener", c)
		}
		if code := callCode(t, ctxT(t), s, emptyCall); code == codes.OK {
			t.Error("an RPC succeeded while not serving")
		}
		env.Set(servingListener(s))
		waitMode(t, s, xdsserver.ModeServing, "")
		if code := callCode(t, ctxT(t), s, emptyCall); code != codes.OK {
			t.Errorf("restored: %v, want OK", code)
		}
	})
	t.Run("NACKed before any valid Listener", func(t *testing.T) {
		env := servertest.NewEnv(t, servertest.Options{})
		s := serve(t, env.Pool())
		env.Set(nackedListener(s))
		waitMode(t, s, xdsserver.ModeNotServing, "exactly one")
	})
	for _, failOnDataErrors := range []bool{false, true} {
		t.Run(fmt.Sprintf("cached, fail_on_data_errors %v", failOnDataErrors), func(t *testing.T) {
			var o servertest.Options
			if failOnDataErrors {
				o.Features = []string{"fail_on_data_errors"}
			}
			env := servertest.NewEnv(t, o)
			s := serve(t, env.Pool())
			env.Set(servingListener(s))
			waitMode(t, s, xdsserver.ModeServing, "")
			conn := s.plaintext(t)
			if err := servertest.Call(ctxT(t), conn, emptyCall); err != nil {
				t.Fatal(err)
			}
			env.Set(nackedListener(s)) // a NACK
			if failOnDataErrors {
				waitMode(t, s, xdsserver.ModeNotServing, "exactly one")
				s.ev.wait(t, "the connection drained", func(e *events) bool { return len(e.drained) == 1 })
			} else {
				// Ambient: the cached Listener keeps serving, on the
				// connection already open and on new ones.
				env.Set() // and a deletion, ambient too
				waitClientState(t, env, s, "DOES_NOT_EXIST")
				if err := servertest.Call(ctxT(t), conn, emptyCall); err != nil {
					t.Errorf("after a NACK and a deletion, the open connection: %v, want OK", err)
				}
				if code := callCode(t, ctxT(t), s, emptyCall); code != codes.OK {
					t.Errorf("after a NACK and a deletion, a new connection: %v, want OK", code)
				}
				if c := s.ev.lastModeLocked(); c.Mode != xdsserver.ModeServing || s.ev.drainedCount() != 0 {
					t.Errorf("mode %v and %d drained connections after ambient errors, want SERVING and none", c.Mode, s.ev.drainedCount())
				}
				return
			}
			env.Set(servingListener(s)) // restored
			waitMode(t, s, xdsserver.ModeServing, "")
			env.Set() // deleted
			waitMode(t, s, xdsserver.ModeNotServing, "deleted by the server")
			env.Set(servingListener(s)) // restored
			waitMode(t, s, xdsserver.ModeServing, "")
			if code := callCode(t, ctxT(t), s, emptyCall); code != codes.OK {
				t.Errorf("restored: %v, want OK", code)
			}
		})
	}
	t.Run("address not the listening one", func(t *testing.T) {
		env := servertest.NewEnv(t, servertest.Options{})
		s := serve(t, env.Pool())
		l := servingListener(s)
		l.Address.GetSocketAddress().PortSpecifier = &corev3.SocketAddress_PortValue{PortValue: s.port + 1}
		env.Set(l)
		waitMode(t, s, xdsserver.ModeNotServing, "not the listening address "+s.addr)
		env.Set(servingListener(s))
		waitMode(t, s, xdsserver.ModeServing, "")
	})
	t.Run("client Listener under the server's name", func(t *testing.T) {
		env := servertest.NewEnv(t, servertest.Options{})
		s := serve(t, env.Pool())
		env.Set(controlplane.Listener(s.name(), "r"))
		waitMode(t, s, xdsserver.ModeNotServing, "client Listener")
	})
}

// waitClientState waits until the server's xDS client holds its Listener
// in state (a cache state name).
func waitClientState(t *testing.T, env *servertest.Env, s *served, state string) {
	t.Helper()
	deadline := time.Now().Add(xdstest.Timeout)
	for time.Now().Before(deadline) {
		for _, c := range s.pool.Clients() {
			for _, e := range c.Dump() {
				if e.Name == s.name() && e.State.String() == state {
					return
				}
			}
		}
		time.Sleep(10 * time.Millisecond) // the cache has no notification for this test to wait on
	}
	t.Fatalf("the Listener did not reach %s", state)
}
