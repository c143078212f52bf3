package xdswatch

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"time"

	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/xdslens/xdslens/internal/xdswatch/demo"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/backends"
	"github.com/xdslens/xdslens/telemetry"
	"github.com/xdslens/xdslens/xdsclient"
	"github.com/xdslens/xdslens/xdsserver"
)

// eventServing is the JSON line of a serving mode change of an --serve
// address.
const eventServing = "serving"

// serveFlag is --serve, given once per address.
type serveFlag []string

func (f *serveFlag) String() string { return strings.Join(*f, ",") }

// Set checks that v is HOST:PORT and adds it.
func (f *serveFlag) Set(v string) error {
	if _, _, err := net.SplitHostPort(v); err != nil {
		return fmt.Errorf("want HOST:PORT: %v", err)
	}
	*f = append(*f, v)
	return nil
}

// listenAll listens on addrs; on a failure it closes those it opened.
func listenAll(addrs []string) ([]net.Listener, error) {
	var out []net.Listener
	for _, a := range addrs {
		lis, err := net.Listen("tcp", a)
		if err != nil {
			for _, l := range out {
				l.Close()
			}
			return nil, fmt.Errorf("--serve %s: %w", a, err)
		}
		out = append(out, lis)
	}
	return out, nil
}

// xdsServing is the xDS-enabled server of the --serve addresses: the
// health service (SERVING) and grpc.testing.TestService, served as the
// Listeners of the bootstrap's server_listener_resource_name_template say,
// with the client of --target.
type xdsServing struct {
	srv     *xdsserver.Server
	served  []chan error
	metrics []*telemetry.ServerMetrics
}

// startXDSServing serves lis: each serving mode change is a line on out;
// the stdout audit logger writes to stderr (standard output is for
// xdswatch's own lines); the server's metrics go to every provider of
// meters.
func startXDSServing(pool *xdsclient.Pool, target string, lis []net.Listener, out *output, meters meters, stderr io.Writer, logger *slog.Logger) (*xdsServing, error) {
	srv, err := xdsserver.New(pool,
		xdsserver.WithPoolTarget(target),
		xdsserver.WithServingModeCallback(out.serving),
		xdsserver.WithStdout(stderr),
		xdsserver.WithLogger(logger),
	)
	if err != nil {
		for _, l := range lis {
			l.Close()
		}
		return nil, fmt.Errorf("--serve: %w", err)
	}
	x := &xdsServing{srv: srv}
	for _, mp := range meters {
		m, err := telemetry.NewServerMetrics(srv, telemetry.WithMeterProvider(mp))
		if err != nil {
			x.stop()
			for _, l := range lis {
				l.Close()
			}
			return nil, err
		}
		x.metrics = append(x.metrics, m)
	}
	healthpb.RegisterHealthServer(srv, health.NewServer())
	backends.RegisterTestService(srv, "xdswatch")
	for _, l := range lis {
		done := make(chan error, 1)
		x.served = append(x.served, done)
		go func() { done <- srv.Serve(l) }()
	}
	return x, nil
}

// stop stops the server at once and waits for its Serve calls.
func (x *xdsServing) stop() {
	x.srv.Stop()
	for _, done := range x.served {
		<-done
	}
	for _, m := range x.metrics {
		m.Close()
	}
}

// servingEvent is the JSON line of a serving mode change.
type servingEvent struct {
	TS      string `json:"ts"`
	Event   string `json:"event"`
	Address string `json:"address"`
	Mode    string `json:"mode"`
	Message string `json:"message,omitempty"`
}

// serving reports a serving mode change of an --serve address.
func (o *output) serving(c xdsserver.ServingModeChange) {
	ts := o.now()
	msg := ""
	if c.Err != nil {
		msg = status.Convert(c.Err).Message()
	}
	if o.json {
		o.writeJSON(servingEvent{TS: ts.UTC().Format(time.RFC3339Nano), Event: eventServing, Address: c.Address, Mode: c.Mode.String(), Message: msg})
		return
	}
	line := fmt.Sprintf("%s serving %s %s", ts.Format(textTime), c.Address, c.Mode)
	if msg != "" {
		line += ": " + msg
	}
	o.writeText(line)
}

// printServeTry prints on w, for people, where the xDS-enabled server
// serves and, for the demo's (d not nil), how to call it under mTLS.
func printServeTry(w io.Writer, addrs []string, d *demo.Demo) {
	for _, a := range addrs {
		if d == nil {
			fmt.Fprintf(w, "xdswatch: xDS-enabled server on %s, served as its Listener says\n", a)
			continue
		}
		fmt.Fprintf(w, "xdswatch: xDS-enabled server on %s, under mTLS and RBAC from the demo's Listener; try: %s\n", a, d.ServeTry(a))
	}
}
