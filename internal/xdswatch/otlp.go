package xdswatch

import (
	"context"
	"fmt"
	"net"
	"net/url"

	"github.com/xdslens/xdslens/exporters"
	"github.com/xdslens/xdslens/xdsclient"
)

// Default ports of OTLP receivers.
const (
	otlpGRPCPort = "4317"
	otlpHTTPPort = "4318"
)

// otlpEndpoint is a parsed --otlp-endpoint.
type otlpEndpoint struct {
	// grpc selects OTLP over gRPC; else OTLP over HTTP with protobuf
	// bodies.
	grpc bool
	// tls is set for grpcs and https.
	tls bool
	// hostPort is the receiver's address.
	hostPort string
	// path is the HTTP path, "" for OTLP's /v1/metrics.
	path string
}

// parseOTLPEndpoint parses grpc://HOST[:PORT], grpcs://HOST[:PORT],
// http://HOST[:PORT][/PATH] or https://HOST[:PORT][/PATH]; the ports
// default to OTLP's, 4317 for gRPC and 4318 for HTTP.
func parseOTLPEndpoint(s string) (otlpEndpoint, error) {
	bad := func(why string) (otlpEndpoint, error) {
		return otlpEndpoint{}, fmt.Errorf("--otlp-endpoint %q: %s: want grpc://HOST:PORT, grpcs://HOST:PORT, http://HOST:PORT or https://HOST:PORT", s, why)
	}
	u, err := url.Parse(s)
	if err != nil {
		return bad(err.Error())
	}
	var e otlpEndpoint
	port := otlpHTTPPort
	switch u.Scheme {
	case "grpc", "grpcs":
		e.grpc, e.tls, port = true, u.Scheme == "grpcs", otlpGRPCPort
		if u.Path != "" && u.Path != "/" {
			return bad("gRPC takes no path")
		}
	case "http", "https":
		e.tls = u.Scheme == "https"
		if u.Path != "/" {
			e.path = u.Path
		}
	default:
		return bad(fmt.Sprintf("unknown scheme %q", u.Scheme))
	}
	if u.Hostname() == "" {
		return bad("no host")
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return bad("user, query and fragment are not allowed")
	}
	if u.Port() != "" {
		port = u.Port()
	}
	e.hostPort = net.JoinHostPort(u.Hostname(), port)
	return e, nil
}

// String returns e as a URL.
func (e otlpEndpoint) String() string {
	scheme := "http"
	if e.grpc {
		scheme = "grpc"
	}
	if e.tls {
		scheme += "s"
	}
	path := e.path
	if !e.grpc && path == "" {
		path = "/v1/metrics"
	}
	return scheme + "://" + e.hostPort + path
}

// pushOTLP pushes the metrics of the pool's clients (package telemetry),
// and those of the channels' data planes once its provider is in meters,
// with OTLP to the receiver at endpoint, an --otlp-endpoint, every
// cfg.otlpInterval (the SDK's default when 0), describing the process as
// cfg says, with its failures logged on cfg.logger. The returned func
// exports what is pending, stops the exporter and detaches the metrics
// from the pool.
func pushOTLP(endpoint string, pool *xdsclient.Pool, cfg *config, meters *meters) (string, func(), error) {
	e, err := parseOTLPEndpoint(endpoint)
	if err != nil {
		return "", nil, err
	}
	// Failed exports are logged as they happen, once per cause.
	opts := []exporters.Option{exporters.WithLogger(cfg.logger)}
	if cfg.otlpInterval > 0 {
		opts = append(opts, exporters.WithInterval(cfg.otlpInterval))
	}
	if !e.tls {
		opts = append(opts, exporters.WithInsecure())
	}
	p, m, err := observe(pool, cfg, func(opts ...exporters.Option) (*exporters.Provider, error) {
		if e.grpc {
			return exporters.OTLPGRPC(context.Background(), e.hostPort, opts...)
		}
		target := e.hostPort
		if e.path != "" {
			target = e.String()
		}
		return exporters.OTLPHTTP(context.Background(), target, opts...)
	}, opts...)
	if err != nil {
		return "", nil, err
	}
	*meters = append(*meters, p)
	return e.String(), func() {
		ctx, cancel := context.WithTimeout(context.Background(), metricsShutdownTimeout)
		defer cancel()
		// The last export, then the metrics leave the pool; a receiver
		// that is down costs the timeout.
		if err := p.Shutdown(ctx); err != nil {
			cfg.logger.Warn("stopping the OTLP metrics exporter", "to", e.String(), "err", err)
		}
		m.Close()
	}, nil
}
