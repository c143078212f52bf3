package dataplane_test

import (
	"context"
	"strings"
	"testing"
	"time"

	otelcodes "go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/xdslens/xdslens/internal/testing/metrictest"
	"github.com/xdslens/xdslens/internal/testing/rpctest"
	"github.com/xdslens/xdslens/internal/testing/xdstest"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/backends"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/controlplane"
	"github.com/xdslens/xdslens/telemetry/dataplane"
	"github.com/xdslens/xdslens/xdsgrpc"
)

// answerFirstEnv is a backend that TestService RPCs reach through a route
// that retries UNAVAILABLE, and any other method through a route that
// does not, on a channel that an rpctest.AnswerFirst can hold RPCs of.
func answerFirstEnv(t *testing.T, opt xdsgrpc.Option) (*rpctest.Env, *grpc.ClientConn, *rpctest.AnswerFirst) {
	t.Helper()
	e := rpctest.NewEnv(t, 1, opt)
	e.Set(controlplane.Listener("L", "R"),
		rpctest.RouteConfig("R",
			rpctest.Route(rpctest.PrefixMatch("/grpc.testing."), controlplane.WithRetry(rpctest.ToCluster("c"), "unavailable", 2, time.Millisecond, time.Millisecond)),
			rpctest.Route(rpctest.PrefixMatch("/"), rpctest.ToCluster("c"))),
		controlplane.Cluster("c", ""),
		rpctest.LocalityEndpoints("c", rpctest.Locality{Zone: "z1", Weight: 1, Addrs: []string{e.Addr(0)}}))
	hold := rpctest.NewAnswerFirst(xdstest.Context(t))
	conn := e.Dial("xdslens:///L", grpc.WithStatsHandler(hold))
	hold.SetConn(conn)
	if _, err := testgrpc.NewTestServiceClient(conn).EmptyCall(xdstest.Context(t), &testpb.Empty{}, grpc.WaitForReady(true)); err != nil {
		t.Fatal(err)
	}
	return e, conn, hold
}

// answeredFirst are the RPCs whose attempts gRPC-Go ends with no status
// in stats.End, and one that ends well without a response message, with
// the status of each of their attempts and of the RPC.
var answeredFirst = []struct {
	name   string
	method string // the full method; its first attempt is held unless ok
	ok     bool   // not held: gRPC-Go's End is right
	call   func(ctx context.Context, e *rpctest.Env, conn *grpc.ClientConn) error
	// attempts are the statuses of the attempts, in order, and rpc the
	// RPC's.
	attempts []codes.Code
	rpc      codes.Code
}{{
	name:   "unary RPC of a method the server does not have",
	method: "/pkg.S/M",
	call: func(ctx context.Context, _ *rpctest.Env, conn *grpc.ClientConn) error {
		return conn.Invoke(ctx, "/pkg.S/M", &emptypb.Empty{}, &emptypb.Empty{}, grpc.StaticMethod())
	},
	attempts: []codes.Code{codes.Unimplemented},
	rpc:      codes.Unimplemented,
}, {
	name:   "client-streaming RPC failed on its headers, retried by its route",
	method: "/grpc.testing.TestService/StreamingInputCall",
	call: func(ctx context.Context, e *rpctest.Env, conn *grpc.ClientConn) error {
		e.Backends[0].Fail(backends.Failure{Every: 2}) // the first answer fails, before reading; the second succeeds
		defer e.Backends[0].Fail(backends.Failure{})
		return rpctest.ClientStreamCall(ctx, conn)
	},
	attempts: []codes.Code{codes.Unavailable, codes.OK},
	rpc:      codes.OK,
}, {
	name:   "server-streaming RPC that ends well without a response",
	method: "/grpc.testing.TestService/StreamingOutputCall",
	ok:     true,
	call: func(ctx context.Context, _ *rpctest.Env, conn *grpc.ClientConn) error {
		return rpctest.EmptyServerStreamCall(ctx, conn)
	},
	attempts: []codes.Code{codes.OK},
	rpc:      codes.OK,
}}

// TestPerCallMetricsAnsweredFirst: an attempt that the server answers
// with Trailers-Only before the client writes its request is recorded with
// the status it ended with, though gRPC-Go's stats.End reports none (as
// for OK): the RPC's when it was the last attempt, the code it was retried
// for otherwise; and an attempt that ends well with no response message
// is OK.
func TestPerCallMetricsAnsweredFirst(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())
	e, conn, hold := answerFirstEnv(t, dataplane.WithPerCallMetrics(mp))
	ctx := xdstest.Context(t)
	const (
		target   = "xdslens:///L"
		locality = `{region="r", zone="z1", sub_zone=""}`
	)
	for _, tc := range answeredFirst {
		t.Run(tc.name, func(t *testing.T) {
			if !tc.ok {
				hold.Arm(tc.method)
			}
			before := metrictest.Collect(t, reader)
			if err := tc.call(ctx, e, conn); status.Code(err) != tc.rpc {
				t.Fatalf("RPC: %v, want %v", err, tc.rpc)
			}
			if !tc.ok {
				hold.Check(t)
			}
			after := metrictest.Collect(t, reader)
			method := strings.TrimPrefix(tc.method, "/")
			wantAttempts := map[string]float64{}
			for _, c := range tc.attempts {
				wantAttempts[metrictest.Lbl("grpc.method", method, "grpc.target", target, "grpc.status", dataplane.StatusName(c),
					"grpc.lb.backend_service", "c", "grpc.lb.locality", locality)]++
			}
			for _, name := range []string{dataplane.MetricAttemptDuration, dataplane.MetricAttemptSentSize, dataplane.MetricAttemptRcvdSize} {
				if got := ofMethod(since(before, after, name), method); !metrictest.Equal(got, wantAttempts) {
					t.Errorf("%s:\n got  %s\n want %s", name, metrictest.Show(got), metrictest.Show(wantAttempts))
				}
			}
			wantCall := map[string]float64{metrictest.Lbl("grpc.method", method, "grpc.target", target, "grpc.status", dataplane.StatusName(tc.rpc)): 1}
			if got := ofMethod(since(before, after, dataplane.MetricCallDuration), method); !metrictest.Equal(got, wantCall) {
				t.Errorf("%s:\n got  %s\n want %s", dataplane.MetricCallDuration, metrictest.Show(got), metrictest.Show(wantCall))
			}
		})
	}
}

// TestTracingAnsweredFirst: the span of an attempt that the server
// answers with Trailers-Only before the client writes its request ends
// with the status the attempt ended with, though gRPC-Go's stats.End
// reports none, at the time the attempt ended, before its call span.
func TestTracingAnsweredFirst(t *testing.T) {
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	defer tp.Shutdown(context.Background())
	e, conn, hold := answerFirstEnv(t, dataplane.WithTracerProvider(tp))
	ctx := xdstest.Context(t)
	for _, tc := range answeredFirst {
		t.Run(tc.name, func(t *testing.T) {
			if !tc.ok {
				hold.Arm(tc.method)
			}
			if err := tc.call(ctx, e, conn); status.Code(err) != tc.rpc {
				t.Fatalf("RPC: %v, want %v", err, tc.rpc)
			}
			if !tc.ok {
				hold.Check(t)
			}
			dotted := strings.ReplaceAll(strings.TrimPrefix(tc.method, "/"), "/", ".")
			calls := spansNamed(sr, dataplane.SpanCallPrefix+dotted)
			attempts := spansNamed(sr, dataplane.SpanAttemptPrefix+dotted)
			if len(calls) != 1 || len(attempts) != len(tc.attempts) {
				t.Fatalf("%d call spans and %d attempt spans, want 1 and %d", len(calls), len(attempts), len(tc.attempts))
			}
			for i, a := range attempts {
				if got, want := a.Status().Code, spanCode(tc.attempts[i]); got != want {
					t.Errorf("attempt %d: span status %v (%q), want %v", i+1, got, a.Status().Description, want)
				}
				if a.EndTime().After(calls[0].EndTime()) || i > 0 && attempts[i-1].EndTime().After(a.StartTime()) {
					t.Errorf("attempt %d ended at %v, after its call span (%v) or the next attempt began", i, a.EndTime(), calls[0].EndTime())
				}
			}
			if got, want := calls[0].Status().Code, spanCode(tc.rpc); got != want {
				t.Errorf("call span status %v, want %v", got, want)
			}
		})
	}
}

// ofMethod keeps the series of method.
func ofMethod(series map[string]float64, method string) map[string]float64 {
	out := map[string]float64{}
	for k, v := range series {
		if strings.Contains(k, "grpc.method="+method+",") {
			out[k] = v
		}
	}
	return out
}

// spanCode is the span status of an attempt or RPC that ended with c.
func spanCode(c codes.Code) otelcodes.Code {
	if c == codes.OK {
		return otelcodes.Ok
	}
	return otelcodes.Error
}
