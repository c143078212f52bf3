package admin

import (
	"google.golang.org/grpc"
	channelzservice "google.golang.org/grpc/channelz/service"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"

	"github.com/xdslens/xdslens/csds"
	"github.com/xdslens/xdslens/xdsclient"
	"github.com/xdslens/xdslens/xdsgrpc/history"
)

// Registrar is a gRPC server that lists the services registered on it, as
// *grpc.Server does. Server reflection answers from that list.
type Registrar interface {
	grpc.ServiceRegistrar
	GetServiceInfo() map[string]grpc.ServiceInfo
}

var _ Registrar = (*grpc.Server)(nil)

// Option configures Register.
type Option interface{ apply(*config) }

type config struct {
	csdsOpts   []csds.Option
	health     *health.Server
	reflection bool
	histories  []history.Source
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// WithCSDSOptions passes opts to csds.NewServer.
func WithCSDSOptions(opts ...csds.Option) Option {
	return optionFunc(func(c *config) { c.csdsOpts = append(c.csdsOpts, opts...) })
}

// WithHealthServer registers h as the health service instead of a new
// health server, for a process that already reports the health of its own
// services through h. Register sets the overall service ("") of h to
// SERVING.
func WithHealthServer(h *health.Server) Option {
	return optionFunc(func(c *config) {
		if h != nil {
			c.health = h
		}
	})
}

// WithoutReflection leaves server reflection out, for a server that
// registers it itself or must not list its services.
func WithoutReflection() Option {
	return optionFunc(func(c *config) { c.reflection = false })
}

// Services are the admin services registered on one server.
type Services struct {
	health *health.Server
}

// Register registers on r the Client Status Discovery Service over src (a
// *xdsclient.Client, a *xdsclient.Pool, or csds.ForTarget's view of one
// target of a pool), channelz,
// the health service, reporting SERVING, server reflection, and, with
// WithConfigHistory, the channels' config histories. Call it
// before r serves; r must not already have any of these services, or
// Register panics as grpc.Server.RegisterService does.
func Register(r Registrar, src xdsclient.Source, opts ...Option) *Services {
	cfg := config{reflection: true}
	for _, o := range opts {
		o.apply(&cfg)
	}
	if cfg.health == nil {
		cfg.health = health.NewServer()
	}
	cfg.health.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)

	csds.NewServer(src, cfg.csdsOpts...).Register(r)
	channelzservice.RegisterChannelzServiceToServer(r)
	healthpb.RegisterHealthServer(r, cfg.health)
	if len(cfg.histories) > 0 {
		registerConfigHistory(r, cfg.histories)
	}
	if cfg.reflection {
		reflection.Register(r)
	}
	return &Services{health: cfg.health}
}

// Health returns the health server registered, to set the status of the
// process's own services.
func (s *Services) Health() *health.Server { return s.health }

// Shutdown sets every service of the health server to NOT_SERVING, for
// good: later status changes are ignored. Call it before stopping the gRPC
// server, so that health checkers see the process go.
func (s *Services) Shutdown() { s.health.Shutdown() }
