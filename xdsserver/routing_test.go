package xdsserver_test

import (
	"strings"
	"testing"
	"time"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/xdslens/xdslens/internal/testing/servertest"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/serverres"
	"github.com/xdslens/xdslens/xdsclient"
	"github.com/xdslens/xdslens/xdsserver"
)

const (
	unaryCall   = "/grpc.testing.TestService/UnaryCall"
	healthCheck = "/grpc.health.v1.Health/Check"
)

func withHeader(r *routev3.Route, name, exact string) *routev3.Route {
	r.Match.Headers = append(r.Match.Headers, &routev3.HeaderMatcher{Name: name, HeaderMatchSpecifier: &routev3.HeaderMatcher_ExactMatch{ExactMatch: exact}})
	return r
}

// A server serves the RPCs whose route has non_forwarding_action; the
// others fail UNAVAILABLE (gRFC A36), naming why.
func TestRouting(t *testing.T) {
	env := servertest.NewEnv(t, servertest.Options{})
	s := serve(t, env.Pool())
	rc := &routev3.RouteConfiguration{Name: "inline", VirtualHosts: []*routev3.VirtualHost{
		{Name: "admin", Domains: []string{"admin.example.com"}, Routes: []*routev3.Route{serverres.Serve("/")}},
		{Name: "default", Domains: []string{"*"}, Routes: []*routev3.Route{
			withHeader(serverres.Serve(unaryCall), "x-tier", "gold"),
			serverres.Serve(emptyCall),
			serverres.Forward("/grpc.testing.TestService/", "backend"),
		}},
	}}
	env.Set(serverres.Listener(s.name(), s.host, s.port, nil, serverres.Chain("c1", nil, serverres.InlineHCM(rc), nil)))
	waitMode(t, s, xdsserver.ModeServing, "")
	ctx := ctxT(t)
	conn := s.plaintext(t)
	admin := s.plaintext(t, grpc.WithAuthority("admin.example.com"))
	for _, tc := range []struct {
		name   string
		conn   *grpc.ClientConn
		method string
		md     []string
		want   codes.Code
		msg    string
	}{
		{"non-forwarding route", conn, emptyCall, nil, codes.OK, ""},
		{"header route", conn, unaryCall, []string{"x-tier", "gold"}, codes.OK, ""},
		{"forwarding route", conn, unaryCall, []string{"x-tier", "silver"}, codes.Unavailable, `has a cluster action; an xDS-enabled server serves only routes with non_forwarding_action`},
		{"no route", conn, healthCheck, nil, codes.Unavailable, `no route of virtual host "default" of the inline route configuration of filter chain "c1" matches the RPC "` + healthCheck + `"`},
		{"virtual host by authority", admin, healthCheck, nil, codes.OK, ""},
		// gRPC answers a method no service has before routing.
		{"unknown service", conn, "/other.Service/M", nil, codes.Unimplemented, ""},
	} {
		err := servertest.Call(ctx, tc.conn, tc.method, tc.md...)
		if status.Code(err) != tc.want || !strings.Contains(status.Convert(err).Message(), tc.msg) {
			t.Errorf("%s: %v, want %v with %q", tc.name, err, tc.want, tc.msg)
		}
	}
}

// A chain whose route configuration comes over RDS serves once it has
// come, and follows its changes on the connections already open.
func TestRDS(t *testing.T) {
	env := servertest.NewEnv(t, servertest.Options{})
	s := serve(t, env.Pool())
	lis := serverres.Listener(s.name(), s.host, s.port, nil,
		serverres.Chain("rds", nil, serverres.RDSHCM("routes"), nil))
	env.Set(lis)
	// Not serving until the route configuration comes.
	ctx := ctxT(t)
	if code := callCode(t, ctx, s, emptyCall); code == codes.OK {
		t.Fatal("an RPC succeeded before the route configuration came")
	}
	s.ev.wait(t, "a connection refused while the route configuration is awaited", func(e *events) bool { return len(e.refused) > 0 })
	if c := s.ev.lastModeLocked(); c.Mode != xdsserver.ModeStarting {
		t.Fatalf("serving mode %+v before the route configuration came, want none yet", c)
	}
	env.Set(lis, serverres.Routes("routes", serverres.Serve(emptyCall)))
	waitMode(t, s, xdsserver.ModeServing, "")
	conn := s.plaintext(t)
	if err := servertest.Call(ctx, conn, emptyCall); err != nil {
		t.Fatalf("EmptyCall: %v", err)
	}
	if code := status.Code(servertest.Call(ctx, conn, unaryCall)); code != codes.Unavailable {
		t.Errorf("UnaryCall before it is routed: %v, want UNAVAILABLE", code)
	}
	// The new route configuration applies to the open connection.
	env.Set(lis, serverres.Routes("routes", serverres.Serve(emptyCall), serverres.Serve(unaryCall)))
	pollCode(t, conn, unaryCall, codes.OK)
	if accepted, _ := s.ev.counts(); accepted != 1 || s.ev.drainedCount() != 0 {
		t.Errorf("%d connections accepted, %d drained; want the first kept", accepted, s.ev.drainedCount())
	}
}

// A chain whose route configuration does not exist: the address serves,
// and that chain's RPCs fail UNAVAILABLE, naming the resource.
func TestRDSMissing(t *testing.T) {
	env := servertest.NewEnv(t, servertest.Options{})
	s := serve(t, env.Pool(xdsclient.WithResourceTimeout(300*time.Millisecond)))
	lis := serverres.Listener(s.name(), s.host, s.port, nil,
		serverres.Chain("rds", nil, serverres.RDSHCM("routes"), nil),
		serverres.Chain("missing", matchSourcePrefix("127.0.0.2", 32), serverres.RDSHCM("no-such-routes"), nil))
	env.Set(lis, serverres.Routes("routes", serverres.Serve("/")))
	waitMode(t, s, xdsserver.ModeServing, "")
	ctx := ctxT(t)
	err := servertest.Call(ctx, s.plaintext(t, fromLocal("127.0.0.2:0")), emptyCall)
	if status.Code(err) != codes.Unavailable || !strings.Contains(err.Error(), `RDS resource "no-such-routes"`) || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("RPC on the chain without route configuration: %v, want UNAVAILABLE naming the resource, which does not exist", err)
	}
	if err := servertest.Call(ctx, s.plaintext(t), emptyCall); err != nil {
		t.Errorf("the other chain: %v, want OK", err)
	}
}

// pollCode makes RPCs on conn until one ends with want.
func pollCode(t *testing.T, conn *grpc.ClientConn, method string, want codes.Code) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := servertest.Call(ctxT(t), conn, method)
		if status.Code(err) == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v, want %v", method, err, want)
		}
		time.Sleep(10 * time.Millisecond) // the update reaches the server asynchronously
	}
}
