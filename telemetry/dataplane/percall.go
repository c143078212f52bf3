package dataplane

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/stats"
	"google.golang.org/grpc/status"

	"github.com/xdslens/xdslens/internal/rpcstatus"
	"github.com/xdslens/xdslens/xdsclient"
	"github.com/xdslens/xdslens/xdsclient/lrs"
	"github.com/xdslens/xdslens/xdsgrpc"
)

// The per-call instruments of gRFC A66, with its names, units and bucket
// boundaries, as WithPerCallMetrics records them.
const (
	// MetricAttemptStarted is an Int64Counter, unit {attempt}, labels
	// grpc.method and grpc.target: attempts started.
	MetricAttemptStarted = "grpc.client.attempt.started"
	// MetricAttemptDuration is a Float64Histogram, unit s, labels
	// grpc.method, grpc.target, grpc.status, grpc.lb.backend_service and
	// grpc.lb.locality: the time from an attempt's start, its pick
	// included, to its end.
	MetricAttemptDuration = "grpc.client.attempt.duration"
	// MetricAttemptSentSize and MetricAttemptRcvdSize are Int64Histograms,
	// unit By, with the labels of MetricAttemptDuration: the bytes of the
	// messages an attempt sent and received, compressed, framing and
	// metadata left out.
	MetricAttemptSentSize = "grpc.client.attempt.sent_total_compressed_message_size"
	MetricAttemptRcvdSize = "grpc.client.attempt.rcvd_total_compressed_message_size"
	// MetricCallDuration is a Float64Histogram, unit s, labels
	// grpc.method, grpc.target and grpc.status: the time an RPC took as
	// its caller saw it, every attempt, retry backoff and injected delay
	// included.
	MetricCallDuration = "grpc.client.call.duration"
	// KeyMethod is grpc.method: the full method name without its leading
	// slash, or "other" for a method called without grpc.StaticMethod.
	KeyMethod = "grpc.method"
)

// LatencyBuckets and SizeBuckets are gRFC A66's bucket boundaries, in
// seconds and bytes.
var (
	LatencyBuckets = []float64{0, 0.00001, 0.00005, 0.0001, 0.0003, 0.0006, 0.0008, 0.001, 0.002, 0.003, 0.004, 0.005, 0.006,
		0.008, 0.01, 0.013, 0.016, 0.02, 0.025, 0.03, 0.04, 0.05, 0.065, 0.08, 0.1, 0.13, 0.16, 0.2, 0.25, 0.3, 0.4, 0.5, 0.65,
		0.8, 1, 2, 5, 10, 20, 50, 100}
	SizeBuckets = []float64{0, 1024, 2048, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864, 268435456,
		1073741824, 4294967296}
)

// WithPerCallMetrics returns an xdsgrpc.Option that records gRFC A66's
// per-call instruments (MetricAttemptStarted, MetricAttemptDuration,
// MetricAttemptSentSize, MetricAttemptRcvdSize, MetricCallDuration) for
// every RPC of the channels DialOptions makes with it, with the instruments
// of mp, the attempts labelled with the cluster and the locality that took
// them (grpc.lb.backend_service, gRFC A89, and grpc.lb.locality, gRFC A78).
// It is apart from WithMeterProvider so that a program whose channels
// gRPC-Go's OpenTelemetry plugin measures already does not count each RPC
// twice. With a nil mp it records nothing and adds nothing to the
// channels (gRFC A66 does not fall back on a global MeterProvider). An
// error creating the instruments goes to otel.Handle.
func WithPerCallMetrics(mp metric.MeterProvider) xdsgrpc.Option {
	if mp == nil {
		return xdsgrpc.JoinOptions()
	}
	m, err := newCallMetrics(mp)
	if err != nil {
		otel.Handle(err)
		return xdsgrpc.JoinOptions()
	}
	return xdsgrpc.JoinOptions(xdsgrpc.WithHooks(&xdsgrpc.Hooks{Retried: m.retried}),
		xdsgrpc.WithDialOptions(grpc.WithChainUnaryInterceptor(m.unary), grpc.WithChainStreamInterceptor(m.stream), grpc.WithStatsHandler(m)))
}

// callMetrics records the per-call instruments. Its label sets are made
// once each and kept, so that recording allocates nothing once they have
// been seen.
type callMetrics struct {
	connsIgnored
	started                  metric.Int64Counter
	attemptDuration, callDur metric.Float64Histogram
	sent, rcvd               metric.Int64Histogram
	localities               localityLabels

	mu   sync.RWMutex
	sets map[callLabels]labelOptions
}

// labelOptions are the options of one label set, made once and passed as
// they are, so that recording allocates nothing.
type labelOptions struct {
	add []metric.AddOption
	rec []metric.RecordOption
}

// callLabels is one label set: grpc.method and grpc.target alone (kind
// labelsStarted), with grpc.status (labelsCall), or with the cluster and
// locality too (labelsAttempt).
type callLabels struct {
	kind                                   uint8
	method, target, status, leaf, locality string
}

const (
	labelsStarted uint8 = iota
	labelsCall
	labelsAttempt
)

func newCallMetrics(mp metric.MeterProvider) (*callMetrics, error) {
	meter := mp.Meter(ScopeName, metric.WithInstrumentationVersion(xdsclient.Version))
	m := &callMetrics{sets: map[callLabels]labelOptions{}}
	var errs []error
	keep := func(name string, err error) {
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
		}
	}
	var err error
	m.started, err = meter.Int64Counter(MetricAttemptStarted, metric.WithUnit("{attempt}"),
		metric.WithDescription("Attempts of RPCs of xdslens channels started."))
	keep(MetricAttemptStarted, err)
	m.attemptDuration, err = meter.Float64Histogram(MetricAttemptDuration, metric.WithUnit("s"), metric.WithExplicitBucketBoundaries(LatencyBuckets...),
		metric.WithDescription("How long attempts of RPCs of xdslens channels took, their pick included, by cluster and locality."))
	keep(MetricAttemptDuration, err)
	m.sent, err = meter.Int64Histogram(MetricAttemptSentSize, metric.WithUnit("By"), metric.WithExplicitBucketBoundaries(SizeBuckets...),
		metric.WithDescription("Compressed bytes of the request messages of each attempt of an RPC of an xdslens channel."))
	keep(MetricAttemptSentSize, err)
	m.rcvd, err = meter.Int64Histogram(MetricAttemptRcvdSize, metric.WithUnit("By"), metric.WithExplicitBucketBoundaries(SizeBuckets...),
		metric.WithDescription("Compressed bytes of the response messages of each attempt of an RPC of an xdslens channel."))
	keep(MetricAttemptRcvdSize, err)
	m.callDur, err = meter.Float64Histogram(MetricCallDuration, metric.WithUnit("s"), metric.WithExplicitBucketBoundaries(LatencyBuckets...),
		metric.WithDescription("How long RPCs of xdslens channels took as their callers saw them, every attempt included."))
	keep(MetricCallDuration, err)
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("dataplane: %w", err)
	}
	return m, nil
}

// labels returns the options of label set k, made once.
func (m *callMetrics) labels(k callLabels) labelOptions {
	m.mu.RLock()
	o, ok := m.sets[k]
	m.mu.RUnlock()
	if ok {
		return o
	}
	kvs := []attribute.KeyValue{attribute.String(KeyMethod, k.method), attribute.String(KeyTarget, k.target)}
	if k.kind != labelsStarted {
		kvs = append(kvs, attribute.String(KeyStatus, k.status))
	}
	if k.kind == labelsAttempt {
		kvs = append(kvs, attribute.String(KeyBackendService, k.leaf), attribute.String(KeyLocality, k.locality))
	}
	set := metric.WithAttributeSet(attribute.NewSet(kvs...))
	o = labelOptions{add: []metric.AddOption{set}, rec: []metric.RecordOption{set}}
	m.mu.Lock()
	m.sets[k] = o
	m.mu.Unlock()
	return o
}

// callRecord is one RPC, from the interceptor's start to its end.
type callRecord struct {
	start          time.Time
	method, target string
	held           rpcstatus.Unsettled[*attemptRecord]
}

type callRecordKey struct{}

// attemptRecord is one attempt of an RPC, from the stats handler's
// TagRPC to its End.
type attemptRecord struct {
	call       *callRecord
	start      time.Time
	sent, rcvd atomic.Int64
	answered   atomic.Bool // a response message came
	// What its End measured, kept while its status is unsettled.
	duration       float64
	leaf, locality string
}

type attemptRecordKey struct{}

func (m *callMetrics) begin(ctx context.Context, cc *grpc.ClientConn, method string, opts []grpc.CallOption) (context.Context, *callRecord) {
	c := &callRecord{start: time.Now(), method: methodLabel(method, opts), target: cc.CanonicalTarget()}
	return context.WithValue(ctx, callRecordKey{}, c), c
}

// end records the duration of the RPC c, which ended with err, and its
// last attempt if its status was unsettled.
func (m *callMetrics) end(ctx context.Context, c *callRecord, err error) {
	d := time.Since(c.start).Seconds()
	if a, ok := c.held.End(err); ok {
		m.recordAttempt(ctx, a, status.Code(err))
	}
	m.callDur.Record(ctx, d, m.labels(callLabels{kind: labelsCall, method: c.method, target: c.target, status: StatusName(status.Code(err))}).rec...)
}

func (m *callMetrics) unary(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	ctx, c := m.begin(ctx, cc, method, opts)
	err := invoker(ctx, method, req, reply, cc, opts...)
	m.end(ctx, c, err)
	return err
}

func (m *callMetrics) stream(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	ctx, c := m.begin(ctx, cc, method, opts)
	s, err := streamer(ctx, desc, cc, method, opts...)
	if err != nil {
		m.end(ctx, c, err)
		return nil, err
	}
	return rpcstatus.WatchEnd(ctx, desc, s, func(err error) { m.end(ctx, c, err) }), nil
}

// TagRPC starts an attempt of an RPC that the interceptor saw.
func (m *callMetrics) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context {
	c, _ := ctx.Value(callRecordKey{}).(*callRecord)
	if c == nil {
		return ctx
	}
	return context.WithValue(ctx, attemptRecordKey{}, &attemptRecord{call: c, start: time.Now()})
}

// HandleRPC counts an attempt when it begins, its message bytes, and
// records it when it ends, with the cluster and locality of its last pick,
// or, when gRPC-Go may not have told its status, once that is known
// (package internal/rpcstatus).
func (m *callMetrics) HandleRPC(ctx context.Context, s stats.RPCStats) {
	a, _ := ctx.Value(attemptRecordKey{}).(*attemptRecord)
	if a == nil {
		return
	}
	switch s := s.(type) {
	case *stats.Begin:
		if held, err, ok := a.call.held.Next(s.IsTransparentRetryAttempt); ok {
			m.recordAttempt(ctx, held, status.Code(err))
		}
		m.started.Add(ctx, 1, m.labels(callLabels{kind: labelsStarted, method: a.call.method, target: a.call.target}).add...)
	case *stats.OutPayload:
		a.sent.Add(int64(s.CompressedLength))
	case *stats.InPayload:
		a.rcvd.Add(int64(s.CompressedLength))
		a.answered.Store(true)
	case *stats.End:
		a.duration = time.Since(a.start).Seconds()
		var locality lrs.Locality
		var sent bool
		if r, ok := xdsgrpc.RoutingOf(ctx); ok {
			a.leaf, locality, sent = r.Leaf, r.Locality, r.Address != ""
		}
		a.locality = m.localities.label(locality, sent)
		err := s.Error
		if err == nil && !a.answered.Load() {
			var known bool
			if err, known = a.call.held.Hold(a); !known {
				return
			}
		}
		m.recordAttempt(ctx, a, status.Code(err))
	}
}

// recordAttempt records attempt a, ended with code.
func (m *callMetrics) recordAttempt(ctx context.Context, a *attemptRecord, code codes.Code) {
	o := m.labels(callLabels{kind: labelsAttempt, method: a.call.method, target: a.call.target,
		status: StatusName(code), leaf: a.leaf, locality: a.locality}).rec
	m.attemptDuration.Record(ctx, a.duration, o...)
	m.sent.Record(ctx, a.sent.Load(), o...)
	m.rcvd.Record(ctx, a.rcvd.Load(), o...)
}

// retried records the attempt of an RPC that xdslens retries, if its
// status was unsettled: it failed with i.Code.
func (m *callMetrics) retried(i xdsgrpc.RetryInfo) {
	if c, _ := i.Context.Value(callRecordKey{}).(*callRecord); c != nil {
		if a, ok := c.held.Take(); ok {
			m.recordAttempt(i.Context, a, i.Code)
		}
	}
}

// connsIgnored is the part of a stats.Handler that connections go to:
// per-call metrics and traces do not observe them.
type connsIgnored struct{}

// TagConn returns ctx.
func (connsIgnored) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context { return ctx }

// HandleConn does nothing.
func (connsIgnored) HandleConn(context.Context, stats.ConnStats) {}
