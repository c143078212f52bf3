package admin

import (
	"sync"

	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/xdslens/xdslens/xdsserver"
)

// ServerService is the health service name under which an xDS-enabled
// server's readiness is reported by convention (TrackServer).
const ServerService = "xds-server"

// TrackServer reports whether the xDS-enabled server srv serves, as the
// health status of service (ServerService by convention; "" makes the
// overall status follow it): SERVING while every address srv serves is
// SERVING (gRFC A36), NOT_SERVING before its Listeners come, whenever one
// is not serving, and once Serve returns. It is opt-in readiness: the
// health service of the admin port answers for the xDS server's ports,
// which close their connections while they do not serve and may require
// mTLS that a probe cannot present. It returns a func that stops the
// reporting and leaves the status as it is; after Shutdown every status
// stays NOT_SERVING.
func (s *Services) TrackServer(srv *xdsserver.Server, service string) (stop func()) {
	var mu sync.Mutex // one status decided and set at a time, from the latest modes
	update := func() {
		mu.Lock()
		defer mu.Unlock()
		st := healthpb.HealthCheckResponse_NOT_SERVING
		if modes := srv.ServingModes(); len(modes) > 0 {
			st = healthpb.HealthCheckResponse_SERVING
			for _, m := range modes {
				if m.Mode != xdsserver.ModeServing {
					st = healthpb.HealthCheckResponse_NOT_SERVING
				}
			}
		}
		s.health.SetServingStatus(service, st)
	}
	remove := srv.AddHooks(&xdsserver.Hooks{ServingModeChanged: func(xdsserver.ServingModeChange) { update() }})
	update()
	return remove
}
