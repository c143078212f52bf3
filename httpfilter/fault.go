package httpfilter

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync/atomic"
	"time"

	faultcommonv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/common/fault/v3"
	faultv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/fault/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdslens/xdslens/internal/xdsduration"
)

// FaultTypeURL is the config type of the fault injection filter (gRFC
// A33), which xdslens channels run; an HTTPFault override replaces the
// whole config for its scope.
const FaultTypeURL = TypeURLPrefix + "envoy.extensions.filters.http.fault.v3.HTTPFault"

// The headers that control faults when the config says so (gRFC A33).
const (
	HeaderFaultAbortHTTP       = "x-envoy-fault-abort-request"
	HeaderFaultAbortGRPC       = "x-envoy-fault-abort-grpc-request"
	HeaderFaultAbortPercentage = "x-envoy-fault-abort-request-percentage"
	HeaderFaultDelay           = "x-envoy-fault-delay-request"
	HeaderFaultDelayPercentage = "x-envoy-fault-delay-request-percentage"
	faultFilterName            = "fault"
	faultActionDelay           = "delay"
	faultActionAbort           = "abort"
)

// activeFaults counts the RPCs a fault is being injected into, in the
// whole process, as gRFC A33 defines max_active_faults.
var activeFaults atomic.Int64

// fault is the fault injection filter.
type fault struct{}

func (fault) TypeURLs() []string { return []string{FaultTypeURL} }

// faultConfig is a parsed HTTPFault.
type faultConfig struct {
	m *faultv3.HTTPFault
	// fixedDelay is delay.fixed_delay, read once.
	fixedDelay time.Duration
}

func (fault) ParseConfig(cfg *anypb.Any) (Config, error) { return parseFault(cfg) }

func (fault) ParseOverride(cfg *anypb.Any) (Config, error) { return parseFault(cfg) }

func parseFault(cfg *anypb.Any) (*faultConfig, error) {
	if cfg.GetTypeUrl() != FaultTypeURL {
		return nil, fmt.Errorf("fault: config of type %q, want %q", cfg.GetTypeUrl(), FaultTypeURL)
	}
	m := new(faultv3.HTTPFault)
	if err := proto.Unmarshal(cfg.GetValue(), m); err != nil {
		return nil, fmt.Errorf("fault: %v", err)
	}
	c := &faultConfig{m: m}
	if s, ok := m.GetAbort().GetErrorType().(*faultv3.FaultAbort_GrpcStatus); ok && s.GrpcStatus > maxStatusCode {
		return nil, fmt.Errorf("fault: abort.grpc_status %d is not a gRPC status code (0 to %d)", s.GrpcStatus, maxStatusCode)
	}
	if d := m.GetDelay().GetFixedDelay(); d != nil {
		var err error
		if c.fixedDelay, err = xdsduration.Parse(d); err != nil {
			return nil, fmt.Errorf("fault: delay.fixed_delay: %v", err)
		}
	}
	return c, nil
}

// maxStatusCode is the largest gRPC status code, UNAUTHENTICATED.
const maxStatusCode = uint32(codes.Unauthenticated)

// BuildClientInterceptor runs the override when there is one, else the
// config.
func (fault) BuildClientInterceptor(cfg, override Config) (ClientInterceptor, error) {
	c, _ := cfg.(*faultConfig)
	if o, ok := override.(*faultConfig); ok {
		c = o
	}
	if c == nil || c.m.GetDelay() == nil && c.m.GetAbort() == nil {
		return nil, nil
	}
	return &faultInterceptor{m: c.m, fixedDelay: c.fixedDelay}, nil
}

type faultInterceptor struct {
	m          *faultv3.HTTPFault
	fixedDelay time.Duration
}

// Intercept delays and aborts the RPC as the config says (gRFC A33):
// each with a draw of its own, the delay first, nothing sent before either
// ends; an RPC faulted counts against max_active_faults while its faults
// last.
func (f *faultInterceptor) Intercept(ctx context.Context, call *ClientCall) (context.Context, func(), error) {
	md, _ := metadata.FromOutgoingContext(ctx)
	delay, delayed := f.delay(md)
	abort, aborted := f.abort(md)
	if !delayed && !aborted {
		return ctx, nil, nil
	}
	if max := f.m.GetMaxActiveFaults(); max != nil {
		if activeFaults.Add(1) > int64(max.GetValue()) {
			activeFaults.Add(-1)
			return ctx, nil, nil
		}
		defer activeFaults.Add(-1)
	}
	if delayed {
		report(call, faultActionDelay, delay.String())
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx, nil, status.FromContextError(ctx.Err()).Err()
		}
	}
	if aborted {
		report(call, faultActionAbort, abort.Code().String())
		if abort.Code() == codes.OK {
			// An abort with OK ends the RPC as if its trailers had come
			// with no response (gRFC A33): the RPC gets no message.
			return ctx, nil, status.Error(codes.Internal, "RPC ended by the fault injection filter with status OK before any response (gRFC A33)")
		}
		return ctx, nil, abort.Err()
	}
	return ctx, nil, nil
}

func report(call *ClientCall, action, detail string) {
	if call != nil && call.Report != nil {
		call.Report(ClientEvent{Filter: faultFilterName, Action: action, Detail: detail})
	}
}

// delay returns the delay of the RPC whose metadata is md, if it is
// delayed.
func (f *faultInterceptor) delay(md metadata.MD) (time.Duration, bool) {
	d := f.m.GetDelay()
	if d == nil {
		return 0, false
	}
	num, den := fraction(d.GetPercentage())
	var delay time.Duration
	switch d.GetFaultDelaySecifier().(type) {
	case *faultcommonv3.FaultDelay_FixedDelay:
		delay = f.fixedDelay
	case *faultcommonv3.FaultDelay_HeaderDelay_:
		ms, ok := headerInt(md, HeaderFaultDelay)
		if !ok {
			return 0, false
		}
		delay = time.Duration(ms) * time.Millisecond
		if p, ok := headerInt(md, HeaderFaultDelayPercentage); ok && p < num {
			num = p
		}
	}
	if delay <= 0 || !draw(num, den) {
		return 0, false
	}
	return delay, true
}

// abort returns the status the RPC whose metadata is md fails with, if it
// is aborted.
func (f *faultInterceptor) abort(md metadata.MD) (*status.Status, bool) {
	a := f.m.GetAbort()
	if a == nil {
		return nil, false
	}
	num, den := fraction(a.GetPercentage())
	var code codes.Code
	switch s := a.GetErrorType().(type) {
	case *faultv3.FaultAbort_HttpStatus:
		code = codeOfHTTP(s.HttpStatus)
	case *faultv3.FaultAbort_GrpcStatus:
		code = codes.Code(s.GrpcStatus)
	case *faultv3.FaultAbort_HeaderAbort_:
		if c, ok := headerInt(md, HeaderFaultAbortGRPC); ok {
			if c > maxStatusCode {
				// Not a status code: no abort, as in gRPC C-core.
				return nil, false
			}
			code = codes.Code(c)
		} else if h, ok := headerInt(md, HeaderFaultAbortHTTP); ok {
			code = codeOfHTTP(uint32(h))
		} else {
			return nil, false
		}
		if p, ok := headerInt(md, HeaderFaultAbortPercentage); ok && p < num {
			num = p
		}
	default:
		return nil, false
	}
	if !draw(num, den) {
		return nil, false
	}
	return status.New(code, "RPC aborted by the fault injection filter (gRFC A33)"), true
}

// fraction returns p as a numerator over a denominator; a nil p is 0 of
// 100.
func fraction(p *typev3.FractionalPercent) (uint32, uint32) {
	den := uint32(100)
	switch p.GetDenominator() {
	case typev3.FractionalPercent_TEN_THOUSAND:
		den = 10_000
	case typev3.FractionalPercent_MILLION:
		den = 1_000_000
	}
	return min(p.GetNumerator(), den), den
}

// draw returns true num times in den.
func draw(num, den uint32) bool { return num > 0 && rand.Uint32N(den) < num }

// headerInt returns the value of header name as a non-negative integer;
// a value that is not one is ignored (gRFC A33).
func headerInt(md metadata.MD, name string) (uint32, bool) {
	for _, v := range md.Get(name) {
		if n, err := strconv.ParseUint(v, 10, 32); err == nil {
			return uint32(n), true
		}
	}
	return 0, false
}

// codeOfHTTP maps an HTTP status to the gRPC code a gRPC client gives it
// (gRPC's HTTP-to-gRPC status mapping).
func codeOfHTTP(h uint32) codes.Code {
	switch h {
	case 400:
		return codes.Internal
	case 401:
		return codes.Unauthenticated
	case 403:
		return codes.PermissionDenied
	case 404:
		return codes.Unimplemented
	case 429, 502, 503, 504:
		return codes.Unavailable
	}
	return codes.Unknown
}

var _ ClientFilter = fault{}
