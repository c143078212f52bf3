package httpfilter_test

import (
	"context"
	"strings"
	"testing"

	faultcommonv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/common/fault/v3"
	faultv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/fault/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/xdslens/xdslens/httpfilter"
)

func faultFilter(t *testing.T) httpfilter.ClientFilter {
	t.Helper()
	f, ok := httpfilter.Get(httpfilter.FaultTypeURL).(httpfilter.ClientFilter)
	if !ok {
		t.Fatal("no client filter registered for HTTPFault")
	}
	return f
}

func faultAny(t *testing.T, m *faultv3.HTTPFault) *anypb.Any {
	t.Helper()
	a, err := anypb.New(m)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestFaultParseErrors checks the configs gRPC C-core rejects (its fault
// filter's GenerateFilterConfig): an abort status that is no gRPC status
// code, and a fixed_delay out of a Duration's range or negative, which
// would otherwise be a fault that never delays.
func TestFaultParseErrors(t *testing.T) {
	all := &typev3.FractionalPercent{Numerator: 100}
	for _, tc := range []struct {
		name string
		m    *faultv3.HTTPFault
		want string
	}{
		{"grpc_status 17", &faultv3.HTTPFault{Abort: &faultv3.FaultAbort{
			ErrorType: &faultv3.FaultAbort_GrpcStatus{GrpcStatus: 17}, Percentage: all,
		}}, "fault: abort.grpc_status 17 is not a gRPC status code (0 to 16)"},
		{"grpc_status largest uint32", &faultv3.HTTPFault{Abort: &faultv3.FaultAbort{
			ErrorType: &faultv3.FaultAbort_GrpcStatus{GrpcStatus: 1<<32 - 1},
		}}, "fault: abort.grpc_status 4294967295 is not a gRPC status code (0 to 16)"},
		{"fixed_delay negative", &faultv3.HTTPFault{Delay: &faultcommonv3.FaultDelay{
			FaultDelaySecifier: &faultcommonv3.FaultDelay_FixedDelay{FixedDelay: &durationpb.Duration{Seconds: -1}}, Percentage: all,
		}}, "fault: delay.fixed_delay: seconds -1 is not in [0, 315576000000]"},
		{"fixed_delay beyond a Duration", &faultv3.HTTPFault{Delay: &faultcommonv3.FaultDelay{
			FaultDelaySecifier: &faultcommonv3.FaultDelay_FixedDelay{FixedDelay: &durationpb.Duration{Seconds: 1 << 40}},
		}}, "fault: delay.fixed_delay: seconds 1099511627776 is not in [0, 315576000000]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := faultFilter(t)
			if _, err := f.ParseConfig(faultAny(t, tc.m)); err == nil || err.Error() != tc.want {
				t.Errorf("ParseConfig: %v, want %q", err, tc.want)
			}
			if _, err := f.ParseOverride(faultAny(t, tc.m)); err == nil || err.Error() != tc.want {
				t.Errorf("ParseOverride: %v, want %q", err, tc.want)
			}
		})
	}
	ok := &faultv3.HTTPFault{Abort: &faultv3.FaultAbort{ErrorType: &faultv3.FaultAbort_GrpcStatus{GrpcStatus: 16}}}
	if _, err := faultFilter(t).ParseConfig(faultAny(t, ok)); err != nil {
		t.Errorf("ParseConfig(grpc_status 16): %v", err)
	}
}

// TestFaultHeaderAbortCode checks the abort a header asks for (gRFC A33):
// a gRPC status code aborts with it; a number that is no status code
// aborts nothing, as in gRPC C-core, instead of failing the RPC with a
// code gRPC does not have.
func TestFaultHeaderAbortCode(t *testing.T) {
	f := faultFilter(t)
	cfg, err := f.ParseConfig(faultAny(t, &faultv3.HTTPFault{Abort: &faultv3.FaultAbort{
		ErrorType:  &faultv3.FaultAbort_HeaderAbort_{HeaderAbort: &faultv3.FaultAbort_HeaderAbort{}},
		Percentage: &typev3.FractionalPercent{Numerator: 100},
	}}))
	if err != nil {
		t.Fatal(err)
	}
	ic, err := f.BuildClientInterceptor(cfg, nil)
	if err != nil || ic == nil {
		t.Fatalf("BuildClientInterceptor: %v, %v", ic, err)
	}
	for _, tc := range []struct {
		header string
		want   codes.Code
	}{
		{"14", codes.Unavailable},
		{"16", codes.Unauthenticated},
		{"17", codes.OK},
		{"99", codes.OK},
		{"4294967295", codes.OK},
	} {
		ctx := metadata.AppendToOutgoingContext(context.Background(), httpfilter.HeaderFaultAbortGRPC, tc.header)
		_, done, err := ic.Intercept(ctx, nil)
		if done != nil {
			done()
		}
		if got := status.Code(err); got != tc.want {
			t.Errorf("%s: %s: RPC ends %v (%v), want %v", httpfilter.HeaderFaultAbortGRPC, tc.header, got, err, tc.want)
		}
		if err != nil && !strings.Contains(err.Error(), "fault injection") {
			t.Errorf("abort %v does not say it is a fault", err)
		}
	}
}
