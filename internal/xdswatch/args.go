package xdswatch

// The command line: the flags, what each accepts, the usage text, and the
// config they make.

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/xdslens/xdslens/internal/xdswatch/demo"
	"github.com/xdslens/xdslens/xdsclient"
)

// Exit statuses of Run.
const (
	// exitOK is a clean end, including one asked for by SIGINT or SIGTERM.
	exitOK = 0
	// exitFailure is a failure to start other than a usage error.
	exitFailure = 1
	// exitUsage is a bad flag, a bad TYPE:NAME or a bad bootstrap.
	exitUsage = 2
)

// Output formats accepted by --output.
const (
	// outputText is one readable line per event.
	outputText = "text"
	// outputJSON is one JSON object per line.
	outputJSON = "json"
)

// config is the command line, parsed and checked.
type config struct {
	// bootstrapFile is --bootstrap, "" when not given.
	bootstrapFile string
	// target is --target.
	target string
	// csdsAddr and metricsAddr are --csds-addr and --metrics-addr, "" when
	// not given.
	csdsAddr    string
	metricsAddr string
	// otlpEndpoint is --otlp-endpoint, "" when not given; otlpInterval is
	// --otlp-interval, 0 when not given.
	otlpEndpoint string
	otlpInterval time.Duration
	// serviceName is --service-name.
	serviceName string
	// resourceTimeout is --resource-timeout.
	resourceTimeout time.Duration
	// keepaliveTime and keepaliveTimeout are --keepalive-time and
	// --keepalive-timeout.
	keepaliveTime, keepaliveTimeout time.Duration
	// output is --output: outputText or outputJSON.
	output string
	// logLevel and logFormat are --log-level and --log-format; logger
	// logs on standard error as they say, once Run has made it.
	logLevel, logFormat string
	logger              *slog.Logger
	// version is --version.
	version bool
	// stdin is --stdin.
	stdin bool
	// demoTour and demoTourStep are --demo-tour and --demo-tour-step.
	demoTour     bool
	demoTourStep time.Duration
	// given holds the names of the flags given on the command line.
	given map[string]bool
	// specs are the positional TYPE:NAME arguments, in order.
	specs []spec
	// targets are the positional xds:/// arguments, in order; with
	// --demo-tour, xds:///demo.
	targets []target
	// rpc is what the --rpc-* flags say.
	rpc rpcConfig
	// serve are the --serve addresses, in order.
	serve serveFlag
	// explain is the explain command, with --method and --header.
	explain explainConfig
	// histories are the config histories of the xds:/// channels, which
	// the admin port serves.
	histories *historySet
}

// usageText is printed for -h and --help.
const usageText = `usage: xdswatch [flags] TYPE:NAME|xds:///LISTENER ...
       xdswatch [flags] explain xds:///LISTENER --method /SERVICE/METHOD [--header KEY=VALUE ...]

Watches xDS resources and prints one line per watcher callback.
TYPE is lds, rds, cds or eds, or the full type URL of one of those types.
xds:///LISTENER routes a gRPC channel by the listener's resources (through
package xdsgrpc, with the client of --target) and prints one line per config
the channel uses (config), or per error that fails it (config_error); with
--rpc-interval it also makes RPCs through it and prints one line each (rpc).
explain waits (up to --rpc-timeout) for the channel's first config, prints
which virtual host, route, clusters (with their weights), request hash and
plan an RPC of --method with the --header metadata would get, and why,
without sending it, and exits (1 when the config fails).

Flags:
  --bootstrap FILE          bootstrap JSON; else GRPC_XDS_BOOTSTRAP / GRPC_XDS_BOOTSTRAP_CONFIG;
                            with none of them it starts an embedded demo control plane
  --target NAME             pool key, the grpc.target label and the CSDS client_scope (default "xdswatch")
  --csds-addr HOST:PORT     serve the admin port there: CSDS, channelz, health, reflection
                            (":0" style ports allowed; "" for none)
  --metrics-addr HOST:PORT  serve Prometheus text on /metrics there ("" for none)
  --otlp-endpoint URL       also push the metrics with OTLP: grpc://HOST:PORT (gRPC),
                            http://HOST:PORT (HTTP, path /v1/metrics unless the URL
                            has one); grpcs:// and https:// for TLS; default ports
                            4317 and 4318
  --otlp-interval DUR       how often to push (default OTEL_METRIC_EXPORT_INTERVAL, else 60s)
  --service-name NAME       OpenTelemetry service.name of the metrics (target_info, OTLP
                            resource) (default OTEL_SERVICE_NAME, else "xdswatch")
  --resource-timeout DUR    base does-not-exist timer (default 15s). It starts when a
                            request for the resource is sent (gRFC A57): while no
                            server can be reached, resources wait and none times out
  --keepalive-time DUR      HTTP/2 keepalive ping interval of the xDS channels (default 5m, gRPC's;
                            at least 10s)
  --keepalive-timeout DUR   how long a ping may go unanswered before the connection
                            counts as failed (default 20s, gRPC's)
  --output text|json        text for people (default), JSON lines for programs
  --log-level LEVEL         what the xDS client and the metrics exporters log on
                            standard error: debug, info, warn (default) or error
  --log-format text|json    the logs as slog's text (default) or JSON lines
  --version                 print the module version and VCS revision, and exit
  --stdin                   also read commands from standard input, one a line:
                            +TYPE:NAME starts one more watcher, -TYPE:NAME cancels
                            the oldest watcher of that resource; +xds:///LISTENER
                            and -xds:///LISTENER start and close a channel
  --rpc-interval DUR        make one RPC per interval through each xds:/// channel,
                            one at a time (default none; with --demo-tour a third
                            of --demo-tour-step)
  --rpc-method /S/M         the RPCs' method, with an empty request
                            (default /grpc.health.v1.Health/Check)
  --rpc-header KEY=VALUE    send this header (metadata) with every RPC; repeatable
  --rpc-timeout DUR         deadline of each RPC (default 1s); one made before the
                            channel's first config waits for it up to this long
  --rpc-concurrency N       RPC loops of each xds:/// channel, each making one RPC
                            per interval and printing its own lines (default 1)
  --serve HOST:PORT         run an xDS-enabled gRPC server there (the health service and
                            grpc.testing.TestService), served as the Listener named by the
                            bootstrap's server_listener_resource_name_template says;
                            repeatable; prints a line per serving mode change (serving)
  --demo-tour               demo only: walk the demo control plane through every
                            cache state (version update, NACK, ignored deletion,
                            TP3 error, does-not-exist, recovery, fallback and
                            switch back), then a failing backend under outlier
                            detection, retries and faults, one step on standard
                            error at a time,
                            routing xds:///demo and showing what its RPCs see
  --demo-tour-step DUR      how long the tour shows each state (default 3s); unless
                            given, --resource-timeout is the same
  --method /S/M             explain: the RPC's method
  --header KEY=VALUE        explain: the RPC's metadata; repeatable

Without a bootstrap, xdswatch starts an embedded demo control plane on
127.0.0.1, with two gRPC backends behind its cluster, watches its resources
(with no argument), and serves the admin port and the metrics on 127.0.0.1
ports chosen by the system (unless --csds-addr and --metrics-addr say
otherwise); in text mode it prints the commands to try. Try:
  xdswatch --rpc-interval 500ms xds:///demo
`

// parseArgs parses the command line. Flags may come before, between or
// after the TYPE:NAME arguments; everything after "--" is TYPE:NAME.
func parseArgs(args []string) (*config, error) {
	cfg := &config{}
	fs := flag.NewFlagSet("xdswatch", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	fs.StringVar(&cfg.bootstrapFile, "bootstrap", "", "bootstrap JSON file")
	fs.StringVar(&cfg.target, "target", "xdswatch", "pool key, grpc.target label and CSDS client_scope")
	fs.StringVar(&cfg.csdsAddr, "csds-addr", "", "serve CSDS on HOST:PORT")
	fs.StringVar(&cfg.metricsAddr, "metrics-addr", "", "serve Prometheus metrics on HOST:PORT")
	fs.StringVar(&cfg.otlpEndpoint, "otlp-endpoint", "", "push the metrics with OTLP to this URL")
	fs.DurationVar(&cfg.otlpInterval, "otlp-interval", 0, "how often to push the metrics with OTLP")
	fs.StringVar(&cfg.serviceName, "service-name", defaultServiceName, "OpenTelemetry service.name of the metrics")
	fs.DurationVar(&cfg.resourceTimeout, "resource-timeout", xdsclient.DefaultResourceTimeout, "base does-not-exist timer")
	fs.DurationVar(&cfg.keepaliveTime, "keepalive-time", xdsclient.DefaultKeepaliveTime, "HTTP/2 keepalive ping interval")
	fs.DurationVar(&cfg.keepaliveTimeout, "keepalive-timeout", xdsclient.DefaultKeepaliveTimeout, "keepalive ping timeout")
	fs.StringVar(&cfg.output, "output", outputText, "text or json")
	fs.StringVar(&cfg.logLevel, "log-level", "warn", "debug, info, warn or error")
	fs.StringVar(&cfg.logFormat, "log-format", logText, "text or json")
	fs.BoolVar(&cfg.version, "version", false, "print the version and exit")
	fs.BoolVar(&cfg.stdin, "stdin", false, "also read +TYPE:NAME and -TYPE:NAME commands from standard input")
	fs.BoolVar(&cfg.demoTour, "demo-tour", false, "walk the demo control plane through every cache state")
	fs.DurationVar(&cfg.demoTourStep, "demo-tour-step", demo.DefaultTourStep, "how long the tour shows each state")
	fs.Var(&cfg.serve, "serve", "run an xDS-enabled server on HOST:PORT; repeatable")
	cfg.rpc.register(fs)
	cfg.explain.register(fs)

	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			break
		}
		if used := len(args) - len(rest); used > 0 && args[used-1] == "--" {
			positional = append(positional, rest...)
			break
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}

	cfg.given = map[string]bool{}
	fs.Visit(func(f *flag.Flag) { cfg.given[f.Name] = true })

	switch cfg.output {
	case outputText, outputJSON:
	default:
		return nil, fmt.Errorf("--output %q: want text or json", cfg.output)
	}
	if err := checkLogFlags(cfg.logLevel, cfg.logFormat); err != nil {
		return nil, err
	}
	if cfg.otlpEndpoint != "" {
		if _, err := parseOTLPEndpoint(cfg.otlpEndpoint); err != nil {
			return nil, err
		}
	}
	if cfg.given["otlp-interval"] && cfg.otlpInterval <= 0 {
		return nil, fmt.Errorf("--otlp-interval %v: must be positive", cfg.otlpInterval)
	}
	if cfg.given["otlp-interval"] && cfg.otlpEndpoint == "" {
		return nil, errors.New("--otlp-interval without --otlp-endpoint")
	}
	if cfg.serviceName == "" {
		return nil, errors.New("--service-name: empty")
	}
	if cfg.resourceTimeout <= 0 {
		return nil, fmt.Errorf("--resource-timeout %v: must be positive", cfg.resourceTimeout)
	}
	if cfg.keepaliveTime < xdsclient.MinKeepaliveTime {
		return nil, fmt.Errorf("--keepalive-time %v: must be at least %v (gRPC's minimum)", cfg.keepaliveTime, xdsclient.MinKeepaliveTime)
	}
	if cfg.keepaliveTimeout <= 0 {
		return nil, fmt.Errorf("--keepalive-timeout %v: must be positive", cfg.keepaliveTimeout)
	}
	if cfg.demoTourStep <= 0 {
		return nil, fmt.Errorf("--demo-tour-step %v: must be positive", cfg.demoTourStep)
	}
	if cfg.given["demo-tour-step"] && !cfg.demoTour {
		return nil, errors.New("--demo-tour-step without --demo-tour")
	}
	if cfg.demoTour && len(positional) > 0 {
		return nil, fmt.Errorf("--demo-tour watches the demo's resources and %s: give no TYPE:NAME or xds:/// argument (got %q)", demo.Target, positional[0])
	}
	if cfg.demoTour && !cfg.given["resource-timeout"] {
		// The does-not-exist step waits for this timer.
		cfg.resourceTimeout = cfg.demoTourStep
	}
	if cfg.demoTour {
		positional = []string{demo.Target}
	}
	positional, err := cfg.explain.take(positional, cfg)
	if err != nil {
		return nil, err
	}
	for _, arg := range positional {
		if isTarget(arg) {
			t, err := parseTarget(arg)
			if err != nil {
				return nil, err
			}
			cfg.targets = append(cfg.targets, t)
			continue
		}
		s, err := parseSpec(arg)
		if err != nil {
			return nil, err
		}
		cfg.specs = append(cfg.specs, s)
	}
	if err := cfg.rpc.check(cfg); err != nil {
		return nil, err
	}
	return cfg, nil
}
