package xdsserver_test

import (
	"sync"
	"testing"

	"github.com/xdslens/xdslens/internal/testing/servertest"
	"github.com/xdslens/xdslens/xdsserver"
)

// A connection hook may stop the server, Stop or GracefulStop: the hooks
// of connections run on a queue of the server's own, not on Serve's
// Accept or a transport's goroutine, which stopping waits for.
func TestStopFromConnectionHooks(t *testing.T) {
	for _, which := range []string{"ConnectionAccepted", "ConnectionRefused", "ConnectionClosed"} {
		for _, graceful := range []bool{false, true} {
			name := which + "/Stop"
			if graceful {
				name = which + "/GracefulStop"
			}
			t.Run(name, func(t *testing.T) {
				env := servertest.NewEnv(t, servertest.Options{})
				var mu sync.Mutex
				var srv *xdsserver.Server
				stopped := make(chan struct{})
				var once sync.Once
				stop := func() {
					mu.Lock()
					s := srv
					mu.Unlock()
					if s == nil {
						return
					}
					once.Do(func() {
						if graceful {
							s.GracefulStop()
						} else {
							s.Stop()
						}
						close(stopped)
					})
				}
				h := &xdsserver.Hooks{}
				switch which {
				case "ConnectionAccepted":
					h.ConnectionAccepted = func(xdsserver.ConnInfo) { stop() }
				case "ConnectionRefused":
					h.ConnectionRefused = func(xdsserver.ConnRefusedInfo) { stop() }
				case "ConnectionClosed":
					h.ConnectionClosed = func(xdsserver.ConnInfo) { stop() }
				}
				s := serve(t, env.Pool(), xdsserver.WithHooks(h))
				mu.Lock()
				srv = s.srv
				mu.Unlock()
				ctx := ctxT(t)
				if which != "ConnectionRefused" {
					env.Set(servingListener(s))
					waitMode(t, s, xdsserver.ModeServing, "")
				}
				conn := s.plaintext(t)
				servertest.Call(ctx, conn, emptyCall)
				conn.Close() // for ConnectionClosed
				select {
				case <-stopped:
				case <-ctx.Done():
					t.Fatalf("%s from %s never returned", name[len(which)+1:], which)
				}
			})
		}
	}
}
