package dataplane_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	otelcodes "go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/experimental/opentelemetry"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/stats"
	grpcotel "google.golang.org/grpc/stats/opentelemetry"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/xdslens/xdslens/internal/testing/rpctest"
	"github.com/xdslens/xdslens/internal/testing/xdstest"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/backends"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/controlplane"
	"github.com/xdslens/xdslens/telemetry/dataplane"
	"github.com/xdslens/xdslens/xdsgrpc"
)

// attrs renders a span's or an event's attributes by key.
func attrs(kvs []attribute.KeyValue) map[string]string {
	out := map[string]string{}
	for _, kv := range kvs {
		out[string(kv.Key)] = kv.Value.Emit()
	}
	return out
}

// spansNamed returns the ended spans of sr called name, oldest first.
func spansNamed(sr *tracetest.SpanRecorder, name string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range sr.Ended() {
		if s.Name() == name {
			out = append(out, s)
		}
	}
	return out
}

// event returns the attributes of the first event of s called name.
func event(s sdktrace.ReadOnlySpan, name string) (map[string]string, bool) {
	for _, e := range s.Events() {
		if e.Name == name {
			return attrs(e.Attributes), true
		}
	}
	return nil, false
}

// checkAttrs reports the attributes of got that differ from want.
func checkAttrs(t *testing.T, what string, got, want map[string]string) {
	t.Helper()
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %s = %q, want %q (all: %v)", what, k, got[k], v, got)
		}
	}
}

// headerRecorder keeps the outgoing headers of every attempt.
type headerRecorder struct {
	mu      sync.Mutex
	headers []metadata.MD
}

func (h *headerRecorder) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context {
	return ctx
}
func (h *headerRecorder) HandleRPC(_ context.Context, s stats.RPCStats) {
	if o, ok := s.(*stats.OutHeader); ok {
		h.mu.Lock()
		h.headers = append(h.headers, o.Header.Copy())
		h.mu.Unlock()
	}
}
func (h *headerRecorder) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context {
	return ctx
}
func (h *headerRecorder) HandleConn(context.Context, stats.ConnStats) {}

// TestTracing traces RPCs with gRFC A72's spans, through real backends: a
// retried RPC is a client call span with the retry as an event and two
// attempt spans under it, each with A72's attributes and message events,
// its status, the routing decision in the xds namespace, and its span
// context in the request's metadata; an RPC the fault filter aborts is a
// call span with the fault as an event and no attempt.
func TestTracing(t *testing.T) {
	defer otel.SetTextMapPropagator(otel.GetTextMapPropagator())
	otel.SetTextMapPropagator(propagation.TraceContext{})
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	defer tp.Shutdown(context.Background())
	e := rpctest.NewEnv(t, 1, dataplane.WithTracerProvider(tp))
	named := rpctest.Route(rpctest.PrefixMatch("/grpc.testing."), controlplane.WithRetry(rpctest.ToCluster("c"), "unavailable", 2, time.Millisecond, time.Millisecond))
	named.Name = "testing"
	e.Set(controlplane.ListenerWithFault("L", "R", controlplane.FaultAbort(uint32(codes.ResourceExhausted), 100), 0),
		rpctest.RouteConfig("R",
			rpctest.Route(rpctest.PathMatch("/other.S/Exact"), rpctest.ToCluster("c")),
			controlplane.WithFaultOverride(named, controlplane.FaultAbort(0, 0)),
			rpctest.Route(rpctest.PrefixMatch("/aborted."), rpctest.ToCluster("c"))),
		controlplane.Cluster("c", ""),
		rpctest.LocalityEndpoints("c", rpctest.Locality{Zone: "z1", Weight: 1, Addrs: []string{e.Addr(0)}}))
	var headers headerRecorder
	conn := e.Dial("xdslens:///L", grpc.WithStatsHandler(&headers))
	client := testgrpc.NewTestServiceClient(conn)
	ctx := xdstest.Context(t)
	if _, err := client.EmptyCall(ctx, &testpb.Empty{}, grpc.WaitForReady(true)); err != nil {
		t.Fatal(err)
	}
	sr.Reset()
	headers.mu.Lock()
	headers.headers = nil
	headers.mu.Unlock()

	e.Backends[0].Fail(backends.Failure{Every: 2}) // the next answer fails, the one after succeeds
	if _, err := client.EmptyCall(ctx, &testpb.Empty{}); err != nil {
		t.Fatal(err)
	}
	e.Backends[0].Fail(backends.Failure{})
	if err := conn.Invoke(ctx, "/aborted.S/M", &emptypb.Empty{}, &emptypb.Empty{}); status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("RPC with an abort: %v, want RESOURCE_EXHAUSTED", err)
	}

	calls := spansNamed(sr, "Sent.grpc.testing.TestService.EmptyCall")
	attempts := spansNamed(sr, "Attempt.grpc.testing.TestService.EmptyCall")
	if len(calls) != 1 || len(attempts) != 2 {
		t.Fatalf("%d call spans and %d attempt spans, want 1 and 2", len(calls), len(attempts))
	}
	call := calls[0]
	if call.SpanKind() != trace.SpanKindClient || call.Status().Code != otelcodes.Ok {
		t.Errorf("call span: kind %v, status %v; want a client span, OK", call.SpanKind(), call.Status())
	}
	retry, ok := event(call, dataplane.EventRetry)
	if !ok {
		t.Errorf("call span: no %s event in %v", dataplane.EventRetry, call.Events())
	}
	checkAttrs(t, "retry event", retry, map[string]string{"xds.attempt": "2", "grpc.status": "UNAVAILABLE", "xds.cluster": "c"})
	routing := map[string]string{
		"xds.listener": "L", "xds.route_config": "R", "xds.route_config.version": "1",
		"xds.virtual_host": "R-vh", "xds.route.index": "1", "xds.route.name": "testing", "xds.cluster": "c",
		"xds.leaf_cluster": "c", "xds.lb_policy": "round_robin", "xds.locality": `{region="r", zone="z1", sub_zone=""}`,
		"xds.endpoint": e.Addr(0), "transparent-retry": "false",
	}
	for i, a := range attempts {
		if a.Parent().SpanID() != call.SpanContext().SpanID() || a.SpanContext().TraceID() != call.SpanContext().TraceID() {
			t.Errorf("attempt %d is not a child of the call span", i+1)
		}
		routing["previous-rpc-attempts"] = []string{"0", "1"}[i]
		checkAttrs(t, "attempt "+routing["previous-rpc-attempts"], attrs(a.Attributes()), routing)
		if _, ok := event(a, dataplane.EventOutboundMessage); !ok {
			t.Errorf("attempt %d: no %s event", i+1, dataplane.EventOutboundMessage)
		}
	}
	if st := attempts[0].Status(); st.Code != otelcodes.Error || !strings.Contains(st.Description, "fails RPC") {
		t.Errorf("first attempt: status %v, want the backend's error", st)
	}
	if st := attempts[1].Status(); st.Code != otelcodes.Ok {
		t.Errorf("second attempt: status %v, want OK", st)
	}
	if in, ok := event(attempts[1], dataplane.EventInboundMessage); !ok || in["sequence-number"] != "0" {
		t.Errorf("second attempt: inbound message event %v, %v; want sequence number 0", in, ok)
	}

	// Each attempt's span context went with its request.
	headers.mu.Lock()
	var sent []string
	for _, h := range headers.headers {
		sent = append(sent, h.Get("traceparent")...)
	}
	headers.mu.Unlock()
	for i, a := range attempts {
		want := "00-" + a.SpanContext().TraceID().String() + "-" + a.SpanContext().SpanID().String() + "-01"
		if i >= len(sent) || sent[i] != want {
			t.Errorf("attempt %d: traceparent headers sent %v, want %s", i+1, sent, want)
		}
	}

	aborted := spansNamed(sr, "Sent.aborted.S.M")
	if len(aborted) != 1 || len(spansNamed(sr, "Attempt.aborted.S.M")) != 0 {
		t.Fatalf("aborted RPC: %d call spans and %d attempt spans, want 1 and 0", len(aborted), len(spansNamed(sr, "Attempt.aborted.S.M")))
	}
	fault, ok := event(aborted[0], dataplane.EventFault)
	if !ok {
		t.Errorf("aborted RPC: no %s event in %v", dataplane.EventFault, aborted[0].Events())
	}
	checkAttrs(t, "fault event", fault, map[string]string{"xds.filter": controlplane.FaultFilterName, "xds.fault.action": "abort", "xds.cluster": "c"})
	if st := aborted[0].Status(); st.Code != otelcodes.Error {
		t.Errorf("aborted RPC: status %v, want an error", st)
	}
}

// TestTracingEjection keeps a streaming RPC's attempt in flight while
// outlier detection ejects the endpoint that fails every RPC: its span
// gets the ejection as an event, naming the endpoint and the algorithm.
func TestTracingEjection(t *testing.T) {
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	defer tp.Shutdown(context.Background())
	ejected := make(chan xdsgrpc.EjectionInfo, 10)
	e := rpctest.NewEnv(t, 3, dataplane.WithTracerProvider(tp), xdsgrpc.WithHooks(&xdsgrpc.Hooks{Ejection: func(i xdsgrpc.EjectionInfo) {
		select {
		case ejected <- i:
		default:
		}
	}}))
	e.Set(controlplane.Listener("L", "R"), controlplane.RouteConfig("R", []string{"*"}, "c"),
		controlplane.WithOutlierDetection(controlplane.Cluster("c", ""), 50*time.Millisecond, time.Hour),
		controlplane.Endpoints("c", e.Addr(0), e.Addr(1), e.Addr(2)))
	conn := e.Dial("xdslens:///L")
	client := testgrpc.NewTestServiceClient(conn)
	ctx := xdstest.Context(t)
	if !rpctest.Poll(ctx, func(ctx context.Context) bool {
		return rpctest.Call(ctx, conn, "/grpc.testing.TestService/EmptyCall").Err == nil
	}) {
		t.Fatal("no RPC succeeded")
	}
	// The client does not read the stream's end: its attempt stays in
	// flight.
	stream, err := client.StreamingOutputCall(ctx, &testpb.StreamingOutputCallRequest{ResponseParameters: []*testpb.ResponseParameters{{}}})
	if err != nil {
		t.Fatal(err)
	}
	e.Backends[2].Fail(backends.Failure{Every: 1})
	var first xdsgrpc.EjectionInfo
	for first.Address == "" {
		rpctest.Call(ctx, conn, "/grpc.testing.TestService/EmptyCall")
		select {
		case first = <-ejected:
		case <-ctx.Done():
			t.Fatal("no endpoint was ejected")
		default:
		}
	}
	for {
		if _, err := stream.Recv(); err != nil {
			break
		}
	}
	attempts := spansNamed(sr, "Attempt.grpc.testing.TestService.StreamingOutputCall")
	if len(attempts) != 1 {
		t.Fatalf("%d attempt spans of the stream, want 1", len(attempts))
	}
	ev, ok := event(attempts[0], dataplane.EventEjection)
	if !ok {
		t.Fatalf("the stream's attempt span has no %s event: %v", dataplane.EventEjection, attempts[0].Events())
	}
	checkAttrs(t, "ejection event", ev, map[string]string{"xds.endpoint": e.Addr(2), "xds.ejected": "true",
		"xds.ejection.algorithm": "failure_percentage", "xds.leaf_cluster": "c"})
	if first.Address != e.Addr(2) {
		t.Errorf("first ejection of %s, want %s", first.Address, e.Addr(2))
	}
}

// TestRoutingOnSpans traces an xdslens channel with gRPC-Go's
// OpenTelemetry plugin, its DialOption first: its call span covers the
// retried RPC, with the retry as an event, and each of its two attempt
// spans carries the routing decision; xdslens makes no span of its own.
func TestRoutingOnSpans(t *testing.T) {
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	defer tp.Shutdown(context.Background())
	e := rpctest.NewEnv(t, 1, dataplane.WithRoutingOnSpans())
	e.Set(controlplane.Listener("L", "R"),
		rpctest.RouteConfig("R", rpctest.Route(rpctest.PrefixMatch(""), controlplane.WithRetry(rpctest.ToCluster("c"), "unavailable", 2, time.Millisecond, time.Millisecond))),
		controlplane.Cluster("c", ""), controlplane.Endpoints("c", e.Addr(0)))
	plugin := grpcotel.DialOption(grpcotel.Options{TraceOptions: opentelemetry.TraceOptions{TracerProvider: tp, TextMapPropagator: propagation.TraceContext{}}})
	conn, err := grpc.NewClient("xdslens:///L", append([]grpc.DialOption{plugin}, append(e.Builder.DialOptions(), grpc.WithTransportCredentials(insecure.NewCredentials()))...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	client := testgrpc.NewTestServiceClient(conn)
	ctx := xdstest.Context(t)
	if _, err := client.EmptyCall(ctx, &testpb.Empty{}, grpc.WaitForReady(true)); err != nil {
		t.Fatal(err)
	}
	sr.Reset()
	e.Backends[0].Fail(backends.Failure{Every: 2})
	if _, err := client.EmptyCall(ctx, &testpb.Empty{}); err != nil {
		t.Fatal(err)
	}
	for _, s := range sr.Ended() {
		if s.InstrumentationScope().Name != "grpc-go" {
			t.Errorf("span %s of scope %s, want only gRPC-Go's", s.Name(), s.InstrumentationScope().Name)
		}
	}
	calls := spansNamed(sr, "Sent.grpc.testing.TestService.EmptyCall")
	attempts := spansNamed(sr, "Attempt.grpc.testing.TestService.EmptyCall")
	if len(calls) != 1 || len(attempts) != 2 {
		t.Fatalf("%d call spans and %d attempt spans, want 1 and 2", len(calls), len(attempts))
	}
	if retry, ok := event(calls[0], dataplane.EventRetry); !ok || retry["xds.attempt"] != "2" {
		t.Errorf("gRPC-Go's call span: retry event %v, %v; want the second attempt", retry, ok)
	}
	for i, a := range attempts {
		checkAttrs(t, "gRPC-Go's attempt span", attrs(a.Attributes()), map[string]string{
			"xds.listener": "L", "xds.route_config": "R", "xds.virtual_host": "R-vh", "xds.route.index": "0",
			"xds.cluster": "c", "xds.leaf_cluster": "c", "xds.endpoint": e.Addr(0), "previous-rpc-attempts": []string{"0", "1"}[i],
		})
	}
}
