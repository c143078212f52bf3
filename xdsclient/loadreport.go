package xdsclient

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/xdslens/xdslens/xdsclient/bootstrap"
	"github.com/xdslens/xdslens/xdsclient/internal/transport"
	"github.com/xdslens/xdslens/xdsclient/internal/txn"
	"github.com/xdslens/xdslens/xdsclient/internal/xerr"
	"github.com/xdslens/xdslens/xdsclient/lrs"
)

// loadServer is the load reporting to one LRS server: its connection, the
// Store its users record into, and the Reporter that sends it. refs is
// guarded by Client.mu; the rest is read-only after creation.
type loadServer struct {
	key  string
	rep  *lrs.Reporter // it closes its connection when it ends
	refs int
}

// ReportLoad starts reporting, to the LRS server at server, the load of
// cluster and its EDS service name edsService, and returns where to
// record it and a func that stops using it. For a Cluster whose
// LRSServer is set (lrs_server is self), server is the URI of the xDS
// server that sent it, the Resource's Server. server is a URI as the
// client shows it (bootstrap.ServerConfig.ShownURI, credentials hidden),
// or as the bootstrap writes it; when two servers of the bootstrap are
// shown alike (they differ only in hidden parts), one the client has a
// channel to is preferred, then the first in the bootstrap.
//
// The users of one server share one LRS stream, and the users of one
// cluster and service one ClusterLoad. The stream is opened at once and
// kept open, restarted after failures, until the last user calls release
// (or the client closes): then a last report is written (waiting at most
// lrs.FinalReportTimeout) and the stream ends. release may be called more
// than once; the ClusterLoad must not be used after it.
//
// server must be one of the bootstrap's servers; its credentials are used.
// cluster and edsService must be valid UTF-8 and at most
// MaxResourceNameSize bytes long, as resource names given to Watch.
// The stream runs on a connection of its own to the server, so load
// reporting never keeps an xDS channel open nor shows in its hooks and
// metrics; the hooks LoadReportStreamStarted, LoadReportStreamEnded and
// LoadReportSent report it. The client's backoff (WithBackoff) spaces
// attempts that fail before a response.
func (c *Client) ReportLoad(server, cluster, edsService string) (load *lrs.ClusterLoad, release func(), err error) {
	// The names go into every report of the stream, which one name that
	// does not marshal would fail for all its users: they are checked as
	// Watch checks a resource name.
	for _, n := range []struct{ what, name string }{{"cluster", cluster}, {"EDS service", edsService}} {
		if err := checkName(n.name); err != nil {
			return nil, nil, fmt.Errorf("xdsclient: load report of %s %s: %v", n.what, xerr.Shown(n.name), err)
		}
	}
	tx := c.mu.Lock()
	st := c.s.Of(tx)
	if st.closed {
		tx.Unlock()
		return nil, nil, fmt.Errorf("xdsclient: load report to %s: %w", xerr.Shown(bootstrap.ShowURI(server)), ErrClosed)
	}
	s := c.serverNamed(tx, server)
	if s == nil {
		tx.Unlock()
		return nil, nil, fmt.Errorf("xdsclient: load report to %s: not an xds_servers entry of the bootstrap", xerr.Shown(bootstrap.ShowURI(server)))
	}
	ls := st.loadServers[s.Key()]
	if ls == nil {
		cc, err := transport.Dial(s, c.o.keepaliveTime, c.o.keepaliveWait, c.o.maxResponseSize)
		if err != nil {
			tx.Unlock()
			return nil, nil, fmt.Errorf("xdsclient: load report: %w", err)
		}
		ls = &loadServer{key: s.Key()}
		ls.rep = lrs.Start(cc, lrs.NewStore(), c.node, lrs.WithBackoff(c.o.backoff), lrs.WithEvents(c.loadEvents(s)), lrs.WithLabels(c.o.target, s.ShownURI()), lrs.WithEnd(func() { cc.Close() }))
		if st.loadServers == nil {
			st.loadServers = map[string]*loadServer{}
		}
		st.loadServers[ls.key] = ls
	}
	ls.refs++
	tx.Unlock()
	var once sync.Once
	release = func() {
		once.Do(func() {
			tx := c.mu.Lock()
			st := c.s.Of(tx)
			ls.refs--
			last := ls.refs == 0 && st.loadServers[ls.key] == ls
			if last {
				delete(st.loadServers, ls.key)
			}
			tx.Unlock()
			if last {
				ls.stop()
			}
		})
	}
	return ls.rep.Store().Cluster(cluster, edsService), release, nil
}

// stop ends the reporting; the Reporter closes the connection when it
// ends. Called from a load report hook of the Reporter, stop returns
// before that: once the hook returns.
func (ls *loadServer) stop() { ls.rep.Stop() }

// serverNamed returns the bootstrap server whose URI, as shown or as
// written, is uri, preferring one the client has a channel to; nil if
// none.
func (c *Client) serverNamed(tx *txn.Tx, uri string) *bootstrap.ServerConfig {
	named := func(s *bootstrap.ServerConfig) bool { return s.URI == uri || s.ShownURI() == uri }
	for _, s := range c.auths.Servers(tx) {
		if named(s.Config()) {
			return s.Config()
		}
	}
	for _, s := range c.cfg.Servers {
		if named(s) {
			return s
		}
	}
	for _, name := range slices.Sorted(maps.Keys(c.cfg.Authorities)) {
		for _, s := range c.cfg.Authorities[name].Servers {
			if named(s) {
				return s
			}
		}
	}
	return nil
}

// loadEvents has the Reporter of server s call the client's hooks, on its
// own goroutine: a load report hook that blocks holds back only that LRS
// stream. The errors of its streams, which gRPC may write with the
// server's URI, are redacted as the ADS streams' are, and their failures
// are logged (lrsLog).
func (c *Client) loadEvents(s *bootstrap.ServerConfig) lrs.Events {
	log := &lrsLog{logger: c.logger, server: s.ShownURI()}
	return lrs.Events{
		ResponseReceived: func(lrs.ResponseInfo) { log.responded() },
		StreamStarted: func(i LoadReportStreamInfo) {
			if f := c.hooks().LoadReportStreamStarted; f != nil {
				f(i)
			}
		},
		StreamEnded: func(i LoadReportStreamEndInfo) {
			i.Err = xerr.Redacted(i.Err, s.Redact)
			log.ended(i)
			if f := c.hooks().LoadReportStreamEnded; f != nil {
				f(i)
			}
		},
		ReportSent: func(i LoadReportInfo) {
			if f := c.hooks().LoadReportSent; f != nil {
				f(i)
			}
		},
	}
}

// lrsLog writes the log lines of the LRS streams to one server, as the
// client logs its ADS streams: a stream that fails before any response
// (it could not be created, or ended without a valid LoadStatsResponse)
// is a warning the first time, and again when the cause (the status code)
// changes; the retries that fail the same way are at debug level, and the
// first response after failures is at info. A stream ended by ReportLoad's
// release or Close is not logged. Its methods run on the Reporter's
// goroutine, one at a time.
type lrsLog struct {
	logger  *slog.Logger
	server  string
	failing bool       // no response since the last failure logged
	cause   codes.Code // the status code of that failure
}

// ended logs the end of a stream attempt.
func (l *lrsLog) ended(i LoadReportStreamEndInfo) {
	switch {
	case errors.Is(i.Err, lrs.ErrStopped):
	case i.ResponseReceived:
		l.failing = false
		l.log(slog.LevelDebug, "LRS stream ended after a response; reconnecting", "err", xerr.ShownErr(i.Err), "reports", i.Reports)
	default:
		code, level := status.Code(i.Err), slog.LevelWarn
		if l.failing && code == l.cause {
			level = slog.LevelDebug
		}
		l.failing, l.cause = true, code
		l.log(level, "LRS stream failed before any response; loads wait for the next stream", "err", xerr.ShownErr(i.Err), "created", i.Created, "backoff", i.Backoff)
	}
}

// responded logs the first response after failures.
func (l *lrsLog) responded() {
	if l.failing {
		l.failing = false
		l.log(slog.LevelInfo, "LRS stream answered again; load reports resume")
	}
}

func (l *lrsLog) log(level slog.Level, msg string, args ...any) {
	l.logger.Log(context.Background(), level, msg, append(args, "server", l.server)...)
}
