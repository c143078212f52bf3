package lrs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	lrsv3 "github.com/envoyproxy/go-control-plane/envoy/service/load_stats/v3"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/xdslens/xdslens/xdsclient/internal/backoff"
	"github.com/xdslens/xdslens/xdsclient/internal/goid"
)

// FeatureSendAllClusters is the client feature, added to the node of the
// first request, that says the client honours send_all_clusters.
const FeatureSendAllClusters = "envoy.lrs.supports_send_all_clusters"

// FinalReportTimeout bounds how long Stop waits for the last report to be
// written.
const FinalReportTimeout = time.Second

// ErrStopped is how a stream ends when its Reporter is stopped.
var ErrStopped = errors.New("load reporting stopped")

// Events are the optional funcs a Reporter calls as its stream comes and
// goes and its reports go out. They run on the Reporter's goroutine, which
// they hold up: they must be cheap. Their Info types are those of package
// xdsclient's Hooks (LoadReportStreamInfo, LoadReportStreamEndInfo,
// LoadReportInfo), which a client's Reporters call directly.
type Events struct {
	// StreamStarted is called when a stream has been created, before its
	// first request is written.
	StreamStarted func(StreamInfo)
	// StreamEnded is called after every attempt: a stream that
	// StreamStarted announced has ended, or (Created false) one could not
	// be created, and no StreamStarted preceded it.
	StreamEnded func(StreamEndInfo)
	// ResponseReceived is called when a valid LoadStatsResponse has been
	// read; what it asks for applies from the next report.
	ResponseReceived func(ResponseInfo)
	// ReportSent is called after a load report has been written to the
	// stream.
	ReportSent func(ReportInfo)
}

// ResponseInfo describes a LoadStatsResponse.
type ResponseInfo struct {
	// Interval is load_reporting_interval.
	Interval time.Duration
	// SendAll is send_all_clusters; else Clusters names the clusters to
	// report.
	SendAll  bool
	Clusters []string
}

// StreamInfo describes a new LRS stream.
type StreamInfo struct {
	// Target and Server name the client and the LRS server (WithLabels).
	Target, Server string
	// Attempt counts stream attempts, starting at 1.
	Attempt int
}

// StreamEndInfo describes the end of an LRS stream attempt.
type StreamEndInfo struct {
	// Target and Server name the client and the LRS server (WithLabels).
	Target, Server string
	// Created is false when the stream could not be created.
	Created bool
	// ResponseReceived reports whether a valid LoadStatsResponse was read.
	ResponseReceived bool
	// Reports is how many load reports were written on the stream.
	Reports int
	// Err is how the stream ended; ErrStopped (errors.Is) when the
	// Reporter stopped, even while the stream was being created.
	Err error
	// Backoff is how long the Reporter waits before the next attempt.
	Backoff time.Duration
}

// ReportInfo describes one load report written to the stream.
type ReportInfo struct {
	// Target and Server name the client and the LRS server (WithLabels).
	Target, Server string
	// Clusters is how many ClusterStats the report carried.
	Clusters int
	// Issued, Succeeded, Errored and Dropped sum the report's counts over
	// its clusters and localities.
	Issued, Succeeded, Errored, Dropped uint64
	// Interval is the server's load_reporting_interval in force.
	Interval time.Duration
	// Final is set for the report written when the Reporter stops.
	Final bool
}

// Option configures a Reporter.
type Option interface{ apply(*options) }

type optionFunc func(*options)

func (f optionFunc) apply(o *options) { f(o) }

type options struct {
	backoff        func(retries int) time.Duration
	events         Events
	target, server string
	end            func()
}

// WithBackoff sets the delay before retry number retries (counted from 0)
// of a stream that ended before any valid response. A stream that had one
// is opened again at once. The default is gRPC's connection backoff (1s,
// ×1.6, ±20%, at most 120s), as for the client's ADS streams.
func WithBackoff(delay func(retries int) time.Duration) Option {
	return optionFunc(func(o *options) { o.backoff = delay })
}

// WithEvents sets the funcs called on the Reporter's events.
func WithEvents(e Events) Option {
	return optionFunc(func(o *options) { o.events = e })
}

// WithLabels sets the Target and Server of the Infos of the Reporter's
// events: the client's name and the LRS server's URI.
func WithLabels(target, server string) Option {
	return optionFunc(func(o *options) { o.target, o.server = target, server })
}

// WithEnd sets a func the Reporter's goroutine calls last, once its
// stream has ended after Stop: to close the connection the Reporter
// writes on, whether Stop waited for it or (called from an event) not.
func WithEnd(f func()) Option {
	return optionFunc(func(o *options) { o.end = f })
}

// Reporter keeps one LRS stream open to a server and writes the loads of
// a Store to it, as the server's latest LoadStatsResponse asks: every
// load_reporting_interval, for the clusters it names or for all of them
// (send_all_clusters). Each report carries what was recorded since the
// previous report of the same cluster. A stream that fails is opened
// again, at once if it had a response, else after a backoff.
//
// Loads recorded while no stream is open (the server is down, or has not
// answered yet) stay in the Store and go out with the first report of the
// next stream. A report whose write fails is put back into the Store, so
// no count is lost or sent twice by a restart; a report written just
// before the connection broke is counted as sent, since LRS has no
// acknowledgement. When the Reporter stops, a last report goes out if a
// stream with a response is open; loads recorded after it are not sent.
type Reporter struct {
	store  *Store
	client lrsv3.LoadReportingServiceClient
	node   *corev3.Node
	o      options

	ctx      context.Context
	cancel   context.CancelFunc
	stopping chan struct{}
	stopOnce sync.Once
	done     chan struct{}
	// inEvent is set while an event func runs; gid is the ID of the
	// goroutine that runs them, read at the first event (goid). Together
	// they tell Stop (and Running) whether its caller is an event func.
	inEvent atomic.Bool
	gid     atomic.Int64
}

// Start starts reporting the loads of store over cc, identifying the
// client with node (cloned, with FeatureSendAllClusters added). It returns
// at once; Stop ends the reporting.
func Start(cc grpc.ClientConnInterface, store *Store, node *corev3.Node, opts ...Option) *Reporter {
	o := options{backoff: backoff.Default.Delay}
	for _, opt := range opts {
		opt.apply(&o)
	}
	n := &corev3.Node{}
	if node != nil {
		n = proto.Clone(node).(*corev3.Node)
	}
	n.ClientFeatures = append(n.ClientFeatures, FeatureSendAllClusters)
	ctx, cancel := context.WithCancel(context.Background())
	r := &Reporter{
		store: store, client: lrsv3.NewLoadReportingServiceClient(cc), node: n, o: o,
		ctx: ctx, cancel: cancel, stopping: make(chan struct{}), done: make(chan struct{}),
	}
	go r.run()
	return r
}

// Store returns the store whose loads the Reporter sends.
func (r *Reporter) Store() *Store { return r.store }

// Stop writes a last report if a stream with a response is open (waiting
// at most FinalReportTimeout), ends the stream and returns once the
// Reporter's goroutines have ended. It may be called more than once.
// Called from one of the Reporter's Events (whose goroutine it would wait
// for), it returns at once: the last report goes out, the stream ends and
// WithEnd's func runs once that event returns.
func (r *Reporter) Stop() {
	r.stopOnce.Do(func() { close(r.stopping) })
	if r.Running() {
		return
	}
	<-r.done
}

// Running reports whether the caller is one of the Reporter's Events,
// running now. Only while an event runs is the caller's goroutine ID
// read.
func (r *Reporter) Running() bool {
	return r.inEvent.Load() && r.gid.Load() == goid.Get()
}

// event runs f, an event func given info, marked as an event (Running).
func event[I any](r *Reporter, f func(I), info I) {
	if f == nil {
		return
	}
	if r.gid.Load() == 0 {
		r.gid.Store(goid.Get())
	}
	r.inEvent.Store(true)
	defer r.inEvent.Store(false)
	f(info)
}

func (r *Reporter) run() {
	defer close(r.done)
	defer func() {
		r.cancel()
		if r.o.end != nil {
			r.o.end()
		}
	}()
	retries := 0
	for attempt := 1; ; attempt++ {
		res := r.runStream(attempt)
		stopped := r.isStopping()
		if stopped && !errors.Is(res.err, ErrStopped) {
			// Stopped while it was being created, or as it broke: the
			// stop is what ended it.
			res.err = fmt.Errorf("%w (%v)", ErrStopped, res.err)
		}
		var delay time.Duration
		if !res.responded && !stopped {
			delay = r.o.backoff(retries)
			retries++
		} else {
			retries = 0
		}
		event(r, r.o.events.StreamEnded, StreamEndInfo{Target: r.o.target, Server: r.o.server, Created: res.created, ResponseReceived: res.responded, Reports: res.reports, Err: res.err, Backoff: delay})
		if stopped {
			return
		}
		if delay > 0 {
			t := time.NewTimer(delay)
			select {
			case <-t.C:
			case <-r.stopping:
				t.Stop()
				return
			}
		}
	}
}

func (r *Reporter) isStopping() bool {
	select {
	case <-r.stopping:
		return true
	default:
		return false
	}
}

// streamResult is how one stream attempt went.
type streamResult struct {
	created, responded bool
	reports            int
	err                error
}

// runStream runs one stream until it fails or the Reporter stops.
func (r *Reporter) runStream(attempt int) (res streamResult) {
	ctx, cancel := context.WithCancel(r.ctx)
	defer cancel()
	// Creating the stream waits while the channel connects; Stop must not
	// wait for that.
	created := make(chan struct{})
	go func() {
		select {
		case <-r.stopping:
			cancel()
		case <-created:
		}
	}()
	stream, err := r.client.StreamLoadStats(ctx)
	close(created)
	if err != nil {
		res.err = fmt.Errorf("creating the LRS stream: %w", err)
		return res
	}
	res.created = true
	event(r, r.o.events.StreamStarted, StreamInfo{Target: r.o.target, Server: r.o.server, Attempt: attempt})
	resps := make(chan *lrsv3.LoadStatsResponse)
	errc := make(chan error, 1)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			m, err := stream.Recv()
			if err != nil {
				errc <- err
				return
			}
			select {
			case resps <- m:
			case <-ctx.Done():
				return
			}
		}
	}()
	defer func() {
		cancel()
		wg.Wait()
	}()
	// streamErr is why the stream broke when a Send failed: Send reports
	// io.EOF, the status comes from Recv.
	streamErr := func(err error) error {
		if errors.Is(err, io.EOF) {
			select {
			case err = <-errc:
			case <-ctx.Done():
				err = ctx.Err()
			}
		}
		return err
	}
	if err := stream.Send(&lrsv3.LoadStatsRequest{Node: r.node}); err != nil {
		res.err = fmt.Errorf("sending the first LoadStatsRequest: %w", streamErr(err))
		return res
	}

	var (
		cfg      reportConfig
		timer    *time.Timer
		timerC   <-chan time.Time
		lastSent time.Time
	)
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		select {
		case <-r.stopping:
			res.err = ErrStopped
			if res.responded {
				t := time.AfterFunc(FinalReportTimeout, cancel)
				if err := r.send(stream, cfg, true); err == nil {
					res.reports++
				}
				t.Stop()
			}
			return res
		case err := <-errc:
			res.err = err
			return res
		case m := <-resps:
			next, err := parseResponse(m)
			if err != nil {
				res.err = err
				return res
			}
			now := time.Now()
			switch {
			case timer == nil:
				lastSent = now
				timer = time.NewTimer(next.interval)
				timerC = timer.C
			case next.interval != cfg.interval:
				// The next report is due one new interval after the
				// last one.
				timer.Reset(max(lastSent.Add(next.interval).Sub(now), 0))
			}
			res.responded = true
			cfg = next
			event(r, r.o.events.ResponseReceived, ResponseInfo{Interval: next.interval, SendAll: next.all, Clusters: next.clusters})
		case <-timerC:
			if err := r.send(stream, cfg, false); err != nil {
				res.err = fmt.Errorf("sending a load report: %w", streamErr(err))
				return res
			}
			res.reports++
			lastSent = time.Now()
			timer.Reset(cfg.interval)
		}
	}
}

// send writes one report of the loads cfg asks for; a report that cannot
// be written goes back into the store.
func (r *Reporter) send(stream lrsv3.LoadReportingService_StreamLoadStatsClient, cfg reportConfig, final bool) error {
	snaps := r.store.take(cfg.clusters, cfg.all, time.Now())
	req, t := buildRequest(snaps)
	if err := stream.Send(req); err != nil {
		r.store.restore(snaps)
		return err
	}
	event(r, r.o.events.ReportSent, ReportInfo{Target: r.o.target, Server: r.o.server, Clusters: t.clusters, Issued: t.issued, Succeeded: t.succeeded, Errored: t.errored, Dropped: t.dropped, Interval: cfg.interval, Final: final})
	return nil
}
