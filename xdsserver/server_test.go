package xdsserver_test

import (
	"net"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/xdslens/xdslens/internal/testing/servertest"
	"github.com/xdslens/xdslens/internal/testing/xdstest"
	"github.com/xdslens/xdslens/xdsclient"
	"github.com/xdslens/xdslens/xdsserver"
)

func TestNewNeedsTheTemplate(t *testing.T) {
	cfg := xdstest.Bootstrap{Servers: []string{"127.0.0.1:1"}, Node: `{"id": "n"}`}.Parse(t)
	pool := xdsclient.NewPool(cfg, xdstest.ClientOptions()...)
	_, err := xdsserver.New(pool)
	if err == nil || !strings.Contains(err.Error(), "server_listener_resource_name_template") {
		t.Fatalf("New = %v, want an error naming the missing template", err)
	}
	if n := len(pool.Clients()); n != 0 {
		t.Errorf("the pool holds %d clients after New failed, want none", n)
	}
}

func TestServeNeedsTCP(t *testing.T) {
	env := servertest.NewEnv(t, servertest.Options{})
	srv, err := xdsserver.New(env.Pool())
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	lis, err := net.Listen("unix", filepath.Join(t.TempDir(), "s"))
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Serve(lis); err == nil || !strings.Contains(err.Error(), "TCP") {
		t.Errorf("Serve(unix) = %v, want an error asking for TCP", err)
	}
}

// The server holds the pool's "#server" client until it stops.
func TestStopReleasesTheClient(t *testing.T) {
	env := servertest.NewEnv(t, servertest.Options{})
	pool := env.Pool()
	ev := newEvents()
	srv, err := xdsserver.New(pool, xdsserver.WithHooks(ev.hooks()))
	if err != nil {
		t.Fatal(err)
	}
	if cs := pool.Clients(); len(cs) != 1 || cs[0].Target() != xdsclient.ServerTarget {
		t.Fatalf("pool clients %v, want the server's", cs)
	}
	done := make(chan error, 1)
	lis := servertest.Listen(t)
	go func() { done <- srv.Serve(lis) }()
	// Serving: a connection is refused (no Listener yet).
	conn := servertest.Dial(t, lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	conn.Connect()
	ev.wait(t, "a refused connection", func(e *events) bool { return len(e.refused) > 0 })
	srv.GracefulStop()
	if err := <-done; err != nil {
		t.Errorf("Serve after GracefulStop = %v, want nil", err)
	}
	if n := len(pool.Clients()); n != 0 {
		t.Errorf("the pool holds %d clients after Stop, want none", n)
	}
	if err := srv.Serve(servertest.Listen(t)); err == nil {
		t.Error("Serve after Stop succeeded")
	}
}

// Hooks added to a running server are told of events alongside the
// others, until removed.
func TestAddHooks(t *testing.T) {
	env := servertest.NewEnv(t, servertest.Options{})
	s := serve(t, env.Pool())
	second := newEvents()
	remove := s.srv.AddHooks(second.hooks())
	// refuse makes one connection, which is refused, and closes its
	// channel, which would try again.
	refuse := func() {
		_, before := s.ev.counts()
		conn := s.plaintext(t)
		conn.Connect()
		s.ev.wait(t, "a refused connection", func(e *events) bool { return len(e.refused) > before })
		conn.Close()
	}
	refuse()
	second.wait(t, "the refused connection, seen by the added hooks", func(e *events) bool { return len(e.refused) == 1 })
	remove()
	refuse()
	if _, n := second.counts(); n != 1 {
		t.Errorf("removed hooks saw %d refused connections, want 1", n)
	}
}

// WithPoolTarget serves with the pool's client of another target.
func TestWithPoolTarget(t *testing.T) {
	env := servertest.NewEnv(t, servertest.Options{})
	pool := env.Pool()
	srv, err := xdsserver.New(pool, xdsserver.WithPoolTarget("shared"))
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	if cs := pool.Clients(); len(cs) != 1 || cs[0].Target() != "shared" {
		t.Errorf("pool clients %v, want the one of target shared", cs)
	}
}
