package xdsserver_test

import (
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/xdslens/xdslens/internal/testing/servertest"
	"github.com/xdslens/xdslens/internal/testing/xdstest"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/serverres"
	"github.com/xdslens/xdslens/xdsserver"
)

// The hooks of one connection come in order, ConnectionAccepted first and
// ConnectionClosed last, even when the address stops serving while the
// ConnectionAccepted hook still runs: the drain, made on the xDS watch's
// goroutine, is reported once the accept has been, and the close after
// it. A hook that blocks holds back the later hooks, not the server.
func TestConnectionHooksInOrderWhenDrainedAsAccepted(t *testing.T) {
	env := servertest.NewEnv(t, servertest.Options{Features: []string{"fail_on_data_errors"}})
	inAccept, release := make(chan struct{}), make(chan struct{})
	var enterOnce, releaseOnce sync.Once
	events := make(chan string, 8)
	s := serve(t, env.Pool(), xdsserver.WithHooks(&xdsserver.Hooks{
		ConnectionAccepted: func(xdsserver.ConnInfo) {
			enterOnce.Do(func() { close(inAccept) })
			<-release
			events <- "accepted"
		},
		ConnectionDrained: func(xdsserver.ConnDrainInfo) { events <- "drained" },
		ConnectionClosed:  func(xdsserver.ConnInfo) { events <- "closed" },
		HandshakeFailed:   func(xdsserver.HandshakeInfo) { events <- "handshake failed" },
	}))
	// Registered after serve's: runs before the server stops.
	t.Cleanup(func() { releaseOnce.Do(func() { close(release) }) })
	env.Set(servingListener(s))
	waitMode(t, s, xdsserver.ModeServing, "")

	raw, err := net.Dial("tcp", s.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	select {
	case <-inAccept:
	case <-time.After(xdstest.Timeout):
		t.Fatal("the connection was not accepted")
	}
	// The ConnectionAccepted hook blocks: the Listener goes, and the drain
	// of the connection is made; the NOT_SERVING hook follows it.
	env.Set()
	waitMode(t, s, xdsserver.ModeNotServing, "deleted")
	releaseOnce.Do(func() { close(release) })

	var got []string
	next := func() {
		t.Helper()
		select {
		case e := <-events:
			got = append(got, e)
		case <-time.After(xdstest.Timeout):
			t.Fatalf("hooks of the connection %q, waiting for more", got)
		}
	}
	next()
	next()
	raw.Close() // the drained connection closes when its client goes
	next()
	if want := []string{"accepted", "drained", "closed"}; !slices.Equal(got, want) {
		t.Errorf("hooks of the connection %q, want %q", got, want)
	}
}

// A connection drained during its TLS handshake is closed by the server:
// its hooks end with ConnectionClosed, and the handshake that the close
// cuts short is not reported as a failed one.
func TestNoHookAfterConnectionClosed(t *testing.T) {
	env := servertest.NewEnv(t, servertest.Options{Features: []string{"fail_on_data_errors"}})
	events := make(chan string, 8)
	s := serve(t, env.Pool(), xdsserver.WithHooks(&xdsserver.Hooks{
		ConnectionAccepted: func(xdsserver.ConnInfo) { events <- "accepted" },
		ConnectionDrained:  func(xdsserver.ConnDrainInfo) { events <- "drained" },
		ConnectionClosed:   func(xdsserver.ConnInfo) { events <- "closed" },
		HandshakeFailed:    func(xdsserver.HandshakeInfo) { events <- "handshake failed" },
	}))
	env.Set(serverres.Listener(s.name(), s.host, s.port, nil,
		serverres.Chain("secure", nil, serverres.InlineHCM(serverres.Routes("r", serverres.Serve("/"))), serverres.TLS(servertest.Provider, "", false))))
	waitMode(t, s, xdsserver.ModeServing, "")

	// A client that sends no ClientHello: the server's handshake waits.
	raw, err := net.Dial("tcp", s.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	next := func() string {
		t.Helper()
		select {
		case e := <-events:
			return e
		case <-time.After(xdstest.Timeout):
			t.Fatal("no hook")
			return ""
		}
	}
	if e := next(); e != "accepted" {
		t.Fatalf("first hook %q, want accepted", e)
	}
	env.Set()
	if e1, e2 := next(), next(); e1 != "drained" || e2 != "closed" {
		t.Fatalf("hooks %q, %q after the Listener went; want drained, closed", e1, e2)
	}
	// Stop returns once every connection's handshake has returned.
	s.srv.Stop()
	close(events)
	for e := range events {
		t.Errorf("hook %q after the connection closed", e)
	}
}
