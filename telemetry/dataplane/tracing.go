package dataplane

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	otelcodes "go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/stats"
	"google.golang.org/grpc/status"

	"github.com/xdslens/xdslens/internal/rpcstatus"
	"github.com/xdslens/xdslens/xdsclient"
	"github.com/xdslens/xdslens/xdsgrpc"
)

// Names of gRFC A72's spans, events and attributes, as gRPC-Go's
// OpenTelemetry plugin names them.
const (
	// SpanCallPrefix and SpanAttemptPrefix begin the names of the call
	// span and of the attempt spans: "Sent.pkg.Service.Method" and
	// "Attempt.pkg.Service.Method".
	SpanCallPrefix    = "Sent."
	SpanAttemptPrefix = "Attempt."
	// KeyPreviousAttempts and KeyTransparentRetry are an attempt span's
	// attributes: the attempts of the RPC before it, and whether gRPC
	// made it as a transparent retry.
	KeyPreviousAttempts = "previous-rpc-attempts"
	KeyTransparentRetry = "transparent-retry"
	// The events of gRFC A72: on the call span, the end of a wait for the
	// channel's first resolution; on an attempt span, the end of a wait
	// for a pick, and each message, with its sequence number and sizes.
	EventResolutionDelayed = "Delayed name resolution complete"
	EventPickDelayed       = "Delayed LB pick complete"
	EventOutboundMessage   = "Outbound message"
	EventInboundMessage    = "Inbound message"
	KeySequenceNumber      = "sequence-number"
	KeyMessageSize         = "message-size"
	KeyMessageCompressed   = "message-size-compressed"
)

// The routing decision on attempt spans, and the events of the data
// plane, in the xds namespace.
const (
	// Attributes of an attempt span: the listener, the route
	// configuration (KeyRouteConfig is "" when it is inline in the
	// listener) with the version of the response that carried it, the
	// virtual host, the route (its index among the
	// virtual host's routes as received, and its name when it has one),
	// the cluster the route chose, the leaf cluster, its endpoint policy,
	// and the locality and address of the endpoint the attempt went to.
	KeyListener           = "xds.listener"
	KeyRouteConfig        = "xds.route_config"
	KeyRouteConfigVersion = "xds.route_config.version"
	KeyVirtualHost        = "xds.virtual_host"
	KeyRouteIndex         = "xds.route.index"
	KeyRouteName          = "xds.route.name"
	KeyCluster            = "xds.cluster"
	KeyLeaf               = "xds.leaf_cluster"
	KeyPolicy             = "xds.lb_policy"
	KeySpanLocality       = "xds.locality"
	KeyEndpoint           = "xds.endpoint"

	// EventRetry, on the call span: the RPC is attempted again under its
	// route's retry_policy (gRFC A44); KeyAttempt is the number of the
	// attempt about to be made, grpc.status the code of the one that
	// failed.
	EventRetry = "xds.retry"
	KeyAttempt = "xds.attempt"
	// EventFault, on the call span: the fault injection filter (gRFC
	// A33) delayed or aborted the RPC; KeyFilter is the filter's name,
	// KeyFaultAction (delay or abort) and KeyFaultDetail (the delay, or
	// the code) what it did.
	EventFault     = "xds.fault"
	KeyFilter      = "xds.filter"
	KeyFaultAction = "xds.fault.action"
	KeyFaultDetail = "xds.fault.detail"
	// EventEjection, on the spans of the attempts in flight on a leaf
	// cluster: outlier detection (gRFC A50) ejected one of its endpoints
	// (KeyEjected true, KeyEjectionAlgorithm saying why) or returned one
	// (KeyEjected false); KeyEndpoint is its address.
	EventEjection        = "xds.ejection"
	KeyEjected           = "xds.ejected"
	KeyEjectionAlgorithm = "xds.ejection.algorithm"
)

// WithTracerProvider returns an xdsgrpc.Option that traces every RPC of the
// channels DialOptions makes with it, with spans from tp, as gRFC A72
// traces gRPC's: a call span ("Sent.pkg.Service.Method", of kind client,
// from the start of the RPC to its end, with the retries and faults of
// the data plane as events) and, under it, one span per attempt
// ("Attempt.pkg.Service.Method", with A72's attributes and message
// events) that carries the attempt's routing decision as attributes in
// the xds namespace and the ejections in its leaf cluster while it was in
// flight as events. Each attempt's span context goes to the server
// through otel.GetTextMapPropagator(). With a nil tp nothing is traced and
// nothing is added to the channels. For channels that gRPC-Go's
// OpenTelemetry plugin traces already, use WithRoutingOnSpans instead.
func WithTracerProvider(tp trace.TracerProvider) xdsgrpc.Option {
	if tp == nil {
		return xdsgrpc.JoinOptions()
	}
	t := newTracing(tp.Tracer(ScopeName, trace.WithInstrumentationVersion(xdsclient.Version)))
	return xdsgrpc.JoinOptions(xdsgrpc.WithHooks(t.hooks()),
		xdsgrpc.WithDialOptions(grpc.WithChainUnaryInterceptor(t.unary), grpc.WithChainStreamInterceptor(t.stream), grpc.WithStatsHandler(t)))
}

// WithRoutingOnSpans returns an xdsgrpc.Option that makes no span but
// puts what WithTracerProvider puts on its spans on those of another
// tracer: the routing decision on the span an attempt's context carries
// once its pick has sent it (gRPC-Go's attempt span, where gRPC-Go's
// OpenTelemetry plugin traces the channel), ejections there too, and the
// retries and faults on the span of the RPC's context as the data plane
// sees it (gRPC-Go's call span, when the plugin's DialOption comes before
// DialOptions').
func WithRoutingOnSpans() xdsgrpc.Option {
	t := newTracing(nil)
	return xdsgrpc.JoinOptions(xdsgrpc.WithHooks(t.hooks()), xdsgrpc.WithDialOptions(grpc.WithStatsHandler(t)))
}

// tracing makes the spans of RPCs, or, without a tracer, adds to the spans
// of others.
type tracing struct {
	connsIgnored
	tracer     trace.Tracer // nil: the spans are another tracer's
	names      spanNames
	localities localityLabels
	inFlight   inFlight
	// buffers holds the attributes of an attempt span while they are
	// given to it, in one call: gRFC A72's two and the routing decision's
	// eleven at most (*[13]attribute.KeyValue). The span copies them, so
	// the buffers are reused.
	buffers sync.Pool
}

// newTracing returns a tracing whose spans come from tracer, or, with a
// nil tracer, one that adds to the spans of another.
func newTracing(tracer trace.Tracer) *tracing {
	t := &tracing{tracer: tracer}
	t.buffers.New = func() any { return new([13]attribute.KeyValue) }
	return t
}

// callSpanOptions are the options of a call span.
var callSpanOptions = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindClient)}

// traceCall is one RPC's call span.
type traceCall struct {
	span     trace.Span
	attempt  string // the name of its attempt spans
	attempts atomic.Int64
	resolved atomic.Bool // the resolution event was added
	held     rpcstatus.Unsettled[*traceAttempt]
}

type traceCallKey struct{}

func (t *tracing) begin(ctx context.Context, method string) (context.Context, *traceCall) {
	n := t.names.of(method)
	ctx, span := t.tracer.Start(ctx, n.call, callSpanOptions...)
	c := &traceCall{span: span, attempt: n.attempt}
	return context.WithValue(ctx, traceCallKey{}, c), c
}

// endSpan ends span with the status of err.
func endSpan(span trace.Span, err error) {
	setSpanStatus(span, err)
	span.End()
}

// setSpanStatus gives span the status of err, as gRPC-Go's plugin does.
func setSpanStatus(span trace.Span, err error) {
	if err != nil {
		span.SetStatus(otelcodes.Error, status.Convert(err).Message())
	} else {
		span.SetStatus(otelcodes.Ok, "")
	}
}

// end ends the call span of c, which ended with err, after the span of
// its last attempt if that attempt's status was unsettled.
func (c *traceCall) end(err error) {
	if a, ok := c.held.End(err); ok {
		a.endUnsettled(err)
	}
	endSpan(c.span, err)
}

func (t *tracing) unary(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	ctx, c := t.begin(ctx, method)
	err := invoker(ctx, method, req, reply, cc, opts...)
	c.end(err)
	return err
}

func (t *tracing) stream(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	ctx, c := t.begin(ctx, method)
	s, err := streamer(ctx, desc, cc, method, opts...)
	if err != nil {
		c.end(err)
		return nil, err
	}
	return rpcstatus.WatchEnd(ctx, desc, s, c.end), nil
}

// traceAttempt is one attempt of an RPC.
type traceAttempt struct {
	call *traceCall // nil without a tracer
	// span is the attempt's span: this tracer's, or, without one, the
	// recording span of the attempt's context (nil when none).
	span       trace.Span
	sent, rcvd atomic.Int64 // messages, for their sequence numbers
	// previous and transparent are gRFC A72's attributes, begun says
	// that they are known; the span gets them with the routing decision,
	// in one call, and routed says that it got them. key is where the
	// attempt is in inFlight, if it is.
	previous    int64
	transparent bool
	begun       bool
	routed      bool
	key         leafKey
	ended       time.Time // when it ended, kept while its status is unsettled
}

// endUnsettled ends the span of a, held since it ended, with the status
// of err.
func (a *traceAttempt) endUnsettled(err error) {
	setSpanStatus(a.span, err)
	a.span.End(trace.WithTimestamp(a.ended))
}

type traceAttemptKey struct{}

// TagRPC starts an attempt's span, under the call span, and sends its
// context with the request's metadata.
func (t *tracing) TagRPC(ctx context.Context, info *stats.RPCTagInfo) context.Context {
	if t.tracer == nil {
		return context.WithValue(ctx, traceAttemptKey{}, &traceAttempt{})
	}
	c, _ := ctx.Value(traceCallKey{}).(*traceCall)
	if c == nil {
		return ctx
	}
	if info.NameResolutionDelay && !c.resolved.Swap(true) {
		c.span.AddEvent(EventResolutionDelayed)
	}
	ctx, span := t.tracer.Start(ctx, c.attempt)
	ctx = context.WithValue(ctx, traceAttemptKey{}, &traceAttempt{call: c, span: span})
	if p := otel.GetTextMapPropagator(); len(p.Fields()) > 0 {
		carrier := &outgoingCarrier{ctx: ctx}
		p.Inject(ctx, carrier)
		ctx = carrier.ctx
	}
	return ctx
}

// HandleRPC records an attempt's events, and its routing decision once
// its pick has sent it or it has ended, and ends its span with its status,
// or, when gRPC-Go may not have told it, once that is known (package
// internal/rpcstatus).
func (t *tracing) HandleRPC(ctx context.Context, s stats.RPCStats) {
	a, _ := ctx.Value(traceAttemptKey{}).(*traceAttempt)
	if a == nil {
		return
	}
	switch s := s.(type) {
	case *stats.Begin:
		if a.call == nil {
			if span := trace.SpanFromContext(ctx); span.IsRecording() {
				a.span = span
			}
			return
		}
		if held, err, ok := a.call.held.Next(s.IsTransparentRetryAttempt); ok {
			held.endUnsettled(err)
		}
		a.previous, a.transparent, a.begun = a.call.attempts.Add(1)-1, s.IsTransparentRetryAttempt, true
	case *stats.DelayedPickComplete:
		if a.call != nil {
			a.span.AddEvent(EventPickDelayed)
		}
	case *stats.OutHeader:
		t.route(ctx, a, true)
	case *stats.OutPayload:
		if a.call != nil {
			a.span.AddEvent(EventOutboundMessage, trace.WithAttributes(messageAttributes(a.sent.Add(1)-1, s.Length, s.CompressedLength)...))
		}
	case *stats.InPayload:
		if a.call != nil {
			a.span.AddEvent(EventInboundMessage, trace.WithAttributes(messageAttributes(a.rcvd.Add(1)-1, s.Length, s.CompressedLength)...))
		}
	case *stats.End:
		t.route(ctx, a, false)
		if a.key.leaf != "" {
			t.inFlight.remove(a.key, a)
		}
		if a.call == nil {
			return
		}
		if s.Error == nil && a.rcvd.Load() == 0 {
			a.ended = s.EndTime
			if err, known := a.call.held.Hold(a); known {
				a.endUnsettled(err)
			}
			return
		}
		endSpan(a.span, s.Error)
	}
}

// messageAttributes are the attributes of a message event.
func messageAttributes(seq int64, size, compressed int) []attribute.KeyValue {
	if compressed != size {
		return []attribute.KeyValue{attribute.Int64(KeySequenceNumber, seq), attribute.Int64(KeyMessageSize, int64(size)), attribute.Int64(KeyMessageCompressed, int64(compressed))}
	}
	return []attribute.KeyValue{attribute.Int64(KeySequenceNumber, seq), attribute.Int64(KeyMessageSize, int64(size))}
}

// route puts the routing decision of attempt a, once, on its span, with
// the attributes kept until then, and, when its pick sent it (sent), has it
// hear the ejections of its leaf cluster until it ends. An attempt that
// ends unrouted gets the attributes kept alone.
func (t *tracing) route(ctx context.Context, a *traceAttempt, sent bool) {
	if a.span == nil || a.routed {
		return
	}
	r, ok := xdsgrpc.RoutingOf(ctx)
	if !ok && (sent || !a.begun) {
		return
	}
	a.routed = true
	buf := t.buffers.Get().(*[13]attribute.KeyValue)
	defer t.buffers.Put(buf)
	kvs := buf[:0]
	if a.begun {
		kvs = append(kvs, attribute.Int64(KeyPreviousAttempts, a.previous), attribute.Bool(KeyTransparentRetry, a.transparent))
	}
	if !ok {
		a.span.SetAttributes(kvs...)
		return
	}
	kvs = append(kvs, attribute.String(KeyListener, r.Listener), attribute.String(KeyRouteConfig, r.RouteConfig),
		attribute.String(KeyRouteConfigVersion, r.RouteConfigVersion), attribute.String(KeyVirtualHost, r.VirtualHost))
	if r.RouteIndex >= 0 {
		kvs = append(kvs, attribute.Int(KeyRouteIndex, r.RouteIndex))
		if r.RouteName != "" {
			kvs = append(kvs, attribute.String(KeyRouteName, r.RouteName))
		}
	}
	if r.Cluster != "" {
		kvs = append(kvs, attribute.String(KeyCluster, r.Cluster))
	}
	if r.Leaf != "" {
		kvs = append(kvs, attribute.String(KeyLeaf, r.Leaf), attribute.String(KeyPolicy, r.Policy))
	}
	if r.Address != "" {
		kvs = append(kvs, attribute.String(KeySpanLocality, t.localities.label(r.Locality, true)), attribute.String(KeyEndpoint, r.Address))
	}
	a.span.SetAttributes(kvs...)
	if sent && r.Leaf != "" {
		a.key = leafKey{target: r.Target, leaf: r.Leaf}
		t.inFlight.add(a.key, a)
	}
}

// hooks put the data plane's events on the spans.
func (t *tracing) hooks() *xdsgrpc.Hooks {
	return &xdsgrpc.Hooks{
		Retried: func(i xdsgrpc.RetryInfo) {
			if c, _ := i.Context.Value(traceCallKey{}).(*traceCall); c != nil {
				if a, ok := c.held.Take(); ok {
					a.endUnsettled(status.Error(i.Code, ""))
				}
			}
			if span := trace.SpanFromContext(i.Context); span.IsRecording() {
				span.AddEvent(EventRetry, trace.WithAttributes(attribute.Int(KeyAttempt, i.Attempt),
					attribute.String(KeyStatus, StatusName(i.Code)), attribute.String(KeyCluster, i.Cluster)))
			}
		},
		FaultInjected: func(i xdsgrpc.FaultInfo) {
			if span := trace.SpanFromContext(i.Context); span.IsRecording() {
				span.AddEvent(EventFault, trace.WithAttributes(attribute.String(KeyFilter, i.Filter),
					attribute.String(KeyFaultAction, i.Action), attribute.String(KeyFaultDetail, i.Detail), attribute.String(KeyCluster, i.Cluster)))
			}
		},
		Ejection: func(i xdsgrpc.EjectionInfo) {
			opt := trace.WithAttributes(attribute.String(KeyEndpoint, i.Address), attribute.Bool(KeyEjected, i.Ejected),
				attribute.String(KeyEjectionAlgorithm, i.Algorithm), attribute.String(KeyLeaf, i.Leaf))
			t.inFlight.each(leafKey{target: i.Target, leaf: i.Leaf}, func(a *traceAttempt) { a.span.AddEvent(EventEjection, opt) })
		},
	}
}

// leafKey names a leaf cluster of a channel.
type leafKey struct{ target, leaf string }

// inFlight holds the attempts that a pick sent to an endpoint, until they
// end, by channel and leaf cluster.
type inFlight struct {
	mu       sync.Mutex
	attempts map[leafKey]map[*traceAttempt]struct{}
}

func (f *inFlight) add(k leafKey, a *traceAttempt) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.attempts == nil {
		f.attempts = map[leafKey]map[*traceAttempt]struct{}{}
	}
	s := f.attempts[k]
	if s == nil {
		s = map[*traceAttempt]struct{}{}
		f.attempts[k] = s
	}
	s[a] = struct{}{}
}

// remove takes a out; the set of k stays, for the next attempts.
func (f *inFlight) remove(k leafKey, a *traceAttempt) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.attempts[k], a)
}

// each calls do with every attempt in flight on k, under the lock.
func (f *inFlight) each(k leafKey, do func(*traceAttempt)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for a := range f.attempts[k] {
		do(a)
	}
}

// spanNames keeps the span names of each method.
type spanNames struct {
	mu    sync.RWMutex
	names map[string]callNames
}

type callNames struct{ call, attempt string }

// maxCachedNames bounds spanNames: past it, names are made for each RPC.
const maxCachedNames = 1024

func (s *spanNames) of(method string) callNames {
	s.mu.RLock()
	n, ok := s.names[method]
	s.mu.RUnlock()
	if ok {
		return n
	}
	dotted := strings.ReplaceAll(trimSlash(method), "/", ".")
	n = callNames{call: SpanCallPrefix + dotted, attempt: SpanAttemptPrefix + dotted}
	s.mu.Lock()
	if s.names == nil {
		s.names = map[string]callNames{}
	}
	if len(s.names) < maxCachedNames {
		s.names[method] = n
	}
	s.mu.Unlock()
	return n
}
