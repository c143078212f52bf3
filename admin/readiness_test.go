package admin_test

import (
	"testing"

	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/xdslens/xdslens/admin"
	"github.com/xdslens/xdslens/internal/testing/servertest"
	"github.com/xdslens/xdslens/internal/testing/xdstest"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/serverres"
	"github.com/xdslens/xdslens/xdsserver"
)

// The admin port's health service follows an xDS-enabled server's serving
// mode under "xds-server": NOT_SERVING until its Listener comes, SERVING
// then, NOT_SERVING when the Listener goes and when the server stops.
func TestTrackServer(t *testing.T) {
	env := servertest.NewEnv(t, servertest.Options{Features: []string{"fail_on_data_errors"}})
	pool := env.Pool()
	cc, svcs := serveAdmin(t, pool)
	srv, err := xdsserver.New(pool)
	if err != nil {
		t.Fatal(err)
	}
	stopTracking := svcs.TrackServer(srv, admin.ServerService)
	defer stopTracking()

	ctx := xdstest.Context(t)
	watch, err := healthpb.NewHealthClient(cc).Watch(ctx, &healthpb.HealthCheckRequest{Service: admin.ServerService})
	if err != nil {
		t.Fatal(err)
	}
	expect := func(want healthpb.HealthCheckResponse_ServingStatus) {
		t.Helper()
		r, err := watch.Recv()
		if err != nil || r.GetStatus() != want {
			t.Fatalf("health of %q: %v, %v; want %v", admin.ServerService, r.GetStatus(), err, want)
		}
	}
	expect(healthpb.HealthCheckResponse_NOT_SERVING) // not serving anything yet

	lis := servertest.Listen(t)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()
	host, port := servertest.HostPort(t, lis.Addr().String())
	name := servertest.ListenerName(lis.Addr().String())
	env.Set(serverres.Listener(name, host, port, nil,
		serverres.Chain("c", nil, serverres.InlineHCM(serverres.Routes("r", serverres.Serve("/"))), nil)))
	expect(healthpb.HealthCheckResponse_SERVING)
	env.Set() // the Listener deleted, with fail_on_data_errors: not serving
	expect(healthpb.HealthCheckResponse_NOT_SERVING)
	env.Set(serverres.Listener(name, host, port, nil,
		serverres.Chain("c", nil, serverres.InlineHCM(serverres.Routes("r", serverres.Serve("/"))), nil)))
	expect(healthpb.HealthCheckResponse_SERVING)
	srv.Stop()
	if err := <-served; err != nil {
		t.Errorf("Serve: %v", err)
	}
	expect(healthpb.HealthCheckResponse_NOT_SERVING)
}
