package xdswatch

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"sync"
	"syscall"

	"github.com/xdslens/xdslens/internal/xdswatch/demo"
	"github.com/xdslens/xdslens/xdsclient"
	"github.com/xdslens/xdslens/xdsclient/bootstrap"
)

// Main is the xdswatch command: it runs Run with the process's arguments
// and standard streams, ends it cleanly on SIGINT or SIGTERM, and exits
// the process with Run's status.
func Main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		// After the first signal, restore the default handling, so that a
		// second one ends the program at once even if cleaning up hangs.
		<-ctx.Done()
		stop()
	}()
	os.Exit(Run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// Run is the whole program: it parses args, watches until ctx is done,
// cleans up and returns the exit status (0 for a clean end, 1 for a failure
// to start, 2 for a usage error). Callers cancel ctx to end it as SIGINT or
// SIGTERM would; Main installs those handlers before calling Run, so before
// anything is printed.
func Run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	errw := &lockedWriter{w: stderr}
	cfg, err := parseArgs(args)
	if errors.Is(err, flag.ErrHelp) {
		io.WriteString(stdout, usageText)
		return exitOK
	}
	if err != nil {
		fmt.Fprintf(errw, "xdswatch: %v (see xdswatch -h)\n", oneLine(err.Error()))
		return exitUsage
	}
	if cfg.version {
		fmt.Fprintln(stdout, versionLine(debug.ReadBuildInfo()))
		return exitOK
	}
	cfg.logger = newLogger(errw, cfg.logLevel, cfg.logFormat)
	failf := func(code int, format string, args ...any) int {
		fmt.Fprintf(errw, "xdswatch: %s\n", oneLine(fmt.Sprintf(format, args...)))
		return code
	}
	// startFailed reports a failure to start something; when ctx is done,
	// the failure is the stop that was asked for, and the end is clean.
	startFailed := func(format string, args ...any) int {
		if ctx.Err() != nil {
			return exitOK
		}
		return failf(exitFailure, format, args...)
	}

	bc, err := loadBootstrap(ctx, cfg.bootstrapFile)
	if ctx.Err() != nil {
		return exitOK
	}
	useDemo := errors.Is(err, bootstrap.ErrNoBootstrap)
	if err != nil && !useDemo {
		return failf(exitUsage, "%v", err)
	}
	if !useDemo && cfg.demoTour {
		return failf(exitUsage, "--demo-tour runs the embedded demo control plane, which starts only without a bootstrap (--bootstrap, GRPC_XDS_BOOTSTRAP, GRPC_XDS_BOOTSTRAP_CONFIG)")
	}
	if !useDemo && len(cfg.specs) == 0 && len(cfg.targets) == 0 && len(cfg.serve) == 0 && !cfg.stdin {
		return failf(exitUsage, "no TYPE:NAME or xds:///LISTENER to watch (see xdswatch -h)")
	}
	if !useDemo && len(cfg.serve) > 0 && bc.ServerListenerResourceNameTemplate == "" {
		return failf(exitUsage, "--serve: the bootstrap has no server_listener_resource_name_template")
	}
	// The --serve addresses are bound first: the demo serves a Listener
	// for each. Without --serve, the tour serves the demo's server on a
	// port the system chooses; the demo without the tour serves the
	// Listener of demoServerAddr, for xdswatch --serve to serve.
	serveAddrs := cfg.serve
	if cfg.demoTour && len(serveAddrs) == 0 {
		serveAddrs = []string{"127.0.0.1:0"}
	}
	serveLis, err := listenAll(serveAddrs)
	if err != nil {
		return failf(exitUsage, "%v", err)
	}
	// The listeners are closed here until the server takes them.
	ownServeLis := true
	defer func() {
		if ownServeLis {
			for _, l := range serveLis {
				l.Close()
			}
		}
	}()
	boundServe := make([]string, len(serveLis))
	for i, l := range serveLis {
		boundServe[i] = l.Addr().String()
	}
	demoServers := boundServe
	if len(demoServers) == 0 {
		demoServers = []string{demo.ServerAddr}
	}

	var d *demo.Demo
	if useDemo {
		d, err = demo.Start(ctx, demoServers, cfg.demoTour)
		if err != nil {
			return startFailed("demo control plane: %v", err)
		}
		defer d.Stop()
		bc = d.Bootstrap()
		if cfg.demoTour || len(cfg.specs)+len(cfg.targets) == 0 {
			cfg.specs = demoSpecs(d)
		}
		// The demo is for looking at: its admin port and metrics are on
		// unless a flag says where, or "" for none.
		if !cfg.given["csds-addr"] {
			cfg.csdsAddr = "127.0.0.1:0"
		}
		if !cfg.given["metrics-addr"] {
			cfg.metricsAddr = "127.0.0.1:0"
		}
		if cfg.output == outputText {
			if cfg.demoTour {
				fmt.Fprintf(errw, "xdswatch: no bootstrap given: demo control plane serving on %s, its fallback on %s\n", d.Addr(), d.FallbackAddr())
			} else {
				fmt.Fprintf(errw, "xdswatch: no bootstrap given: demo control plane serving on %s\n", d.Addr())
			}
		}
	}

	for _, t := range cfg.targets {
		if _, err := t.listener(bc); err != nil {
			return failf(exitUsage, "%v", err)
		}
	}

	pool := xdsclient.NewPool(bc,
		xdsclient.WithResourceTimeout(cfg.resourceTimeout),
		xdsclient.WithKeepalive(cfg.keepaliveTime, cfg.keepaliveTimeout),
		xdsclient.WithLogger(cfg.logger),
	)
	client, release, err := pool.Get(cfg.target)
	if err != nil {
		return failf(exitUsage, "%v", err)
	}
	defer release()
	if cfg.explain.on {
		return runExplain(ctx, cfg, client, newOutput(stdout, cfg.output), errw)
	}
	stopNote := func() {}
	if cfg.output == outputText {
		stopNote = sync.OnceFunc(noteUnreached(client, errw))
		defer stopNote()
	}

	cfg.histories = &historySet{}
	servers, err := startSidecars(pool, cfg)
	if err != nil {
		if ctx.Err() != nil {
			return exitOK
		}
		return failf(exitUsage, "%v", err)
	}
	defer servers.stop()
	// After the sidecars, so that the metrics see the stream start.
	if useDemo {
		stopLoad, err := d.ReportLoad(client)
		if err != nil {
			return startFailed("demo load report: %v", err)
		}
		defer stopLoad()
	}

	out := newOutput(stdout, cfg.output)
	out.listening(servers.csds, servers.metrics)
	if cfg.output == outputText {
		servers.printTry(errw)
	}

	var served *xdsServing
	if len(serveLis) > 0 {
		ownServeLis = false
		served, err = startXDSServing(pool, cfg.target, serveLis, out, servers.meters, errw, cfg.logger)
		if err != nil {
			return failf(exitUsage, "%v", err)
		}
		defer served.stop()
		if cfg.output == outputText {
			printServeTry(errw, boundServe, d)
		}
	}

	channels := newChannelSet(pool, client, out, cfg.rpc, servers.meters)
	channels.histories = cfg.histories
	watches := newWatchSet(client, out, channels)
	// Deferred calls run last in, first out: channels close and watches
	// are cancelled, then the sidecars stop, then the pool closes the
	// client, then the demo server and its backends.
	defer watches.cancelAll()
	defer channels.closeAll()
	// First of all: a stream that the end of the channels and watches
	// ends (one still connecting) is no failure of its server.
	defer stopNote()
	// Before that, the last OTLP export, while every watch and channel
	// lives.
	defer servers.pushLast()
	for _, s := range cfg.specs {
		watches.add(s)
	}
	for _, t := range cfg.targets {
		if err := channels.add(t); err != nil {
			return failf(exitUsage, "%v", err)
		}
	}

	var cmds <-chan string
	if cfg.stdin {
		done := make(chan struct{})
		defer close(done)
		cmds = readCommands(stdin, done, errw)
	}
	// The tour's watch commands; it is stopped before the watches are
	// cancelled and the client closes.
	tourCmds := make(chan string)
	if cfg.demoTour {
		defer d.RunTour(ctx, demo.TourEnv{
			Client: client, Server: served.srv,
			Step: cfg.demoTourStep, Timeout: cfg.resourceTimeout,
			Say:              func(line string) { fmt.Fprintf(errw, "xdswatch: %s\n", oneLine(line)) },
			Watch:            tourCmds,
			ObserveRPCs:      channels.observeTourRPCs,
			ObserveEjections: channels.observeTourEjections,
		})()
	}
	for {
		select {
		case <-ctx.Done():
			return exitOK
		case line := <-tourCmds:
			if err := watches.command(line); err != nil {
				fmt.Fprintf(errw, "xdswatch: tour: %s\n", oneLine(err.Error()))
			}
		case line, ok := <-cmds:
			if !ok {
				// End of standard input: keep watching.
				cmds = nil
				continue
			}
			if err := watches.command(line); err != nil {
				fmt.Fprintf(errw, "xdswatch: stdin: %s\n", oneLine(err.Error()))
			}
		}
	}
}

// loadBootstrap reads the bootstrap from file, or from the environment when
// file is "". With neither, it returns an error matching
// bootstrap.ErrNoBootstrap. The file may be a pipe that is never written
// (a FIFO, a process substitution): the read runs on its own goroutine, and
// loadBootstrap returns ctx's error as soon as ctx is done, so that a
// signal still ends the program.
func loadBootstrap(ctx context.Context, file string) (*bootstrap.Config, error) {
	type result struct {
		cfg *bootstrap.Config
		err error
	}
	done := make(chan result, 1)
	go func() {
		var r result
		if file != "" {
			r.cfg, r.err = bootstrap.ParseFile(file)
		} else {
			r.cfg, r.err = bootstrap.FromEnv()
		}
		done <- r
	}()
	select {
	case r := <-done:
		return r.cfg, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// oneLine folds a multi-line message into one line, so that every message
// on standard error and every text event is exactly one line.
func oneLine(s string) string {
	s = strings.TrimRight(s, "\r\n")
	if !strings.ContainsAny(s, "\r\n") {
		return s
	}
	s = strings.ReplaceAll(s, "\r\n", "\n")
	return strings.Join(strings.FieldsFunc(s, func(r rune) bool { return r == '\n' || r == '\r' }), "; ")
}
