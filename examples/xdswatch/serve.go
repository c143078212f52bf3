package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/xdslens/xdslens/xdsclient"
)

// errNotSupported is returned by a serve function whose server the library
// cannot provide yet.
var errNotSupported = errors.New("not supported yet")

// serveFunc starts one server beside the watches on addr (HOST:PORT, port 0
// allowed) for client. It returns the address actually bound and a func
// that stops the server, or errNotSupported.
type serveFunc func(addr string, client *xdsclient.Client) (bound string, stop func(), err error)

// sidecars are the servers started beside the watches.
type sidecars struct {
	// csds and metrics are the bound addresses, "" when not serving.
	csds    string
	metrics string
	// stops stop the running servers.
	stops []func()
}

// startSidecars starts the servers cfg asks for. One that is not supported
// yet gets one line on errw and is skipped; any other failure stops the
// ones already started and is returned.
func startSidecars(client *xdsclient.Client, cfg *config, errw io.Writer) (*sidecars, error) {
	s := &sidecars{}
	for _, sc := range []struct {
		flag  string
		addr  string
		serve serveFunc
		bound *string
	}{
		{"--csds-addr", cfg.csdsAddr, serveCSDS, &s.csds},
		{"--metrics-addr", cfg.metricsAddr, serveMetrics, &s.metrics},
	} {
		if sc.addr == "" {
			continue
		}
		bound, stop, err := sc.serve(sc.addr, client)
		switch {
		case errors.Is(err, errNotSupported):
			fmt.Fprintf(errw, "xdswatch: %s %s: %v; continuing without it\n", sc.flag, sc.addr, err)
		case err != nil:
			s.stop()
			return nil, fmt.Errorf("%s %s: %w", sc.flag, sc.addr, err)
		default:
			*sc.bound = bound
			s.stops = append(s.stops, stop)
		}
	}
	return s, nil
}

// stop stops every running server, last started first.
func (s *sidecars) stop() {
	for i := len(s.stops) - 1; i >= 0; i-- {
		s.stops[i]()
	}
	s.stops = nil
}
