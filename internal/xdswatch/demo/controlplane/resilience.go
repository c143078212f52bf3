package controlplane

import (
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	faultcommonv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/common/fault/v3"
	faultv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/fault/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// FaultFilterName is the instance name ListenerWithFault gives the fault
// filter, which typed_per_filter_config overrides name.
const FaultFilterName = "envoy.filters.http.fault"

// ListenerWithFault is a client Listener named name whose route
// configuration routeConfigName comes over ADS, with the fault injection
// filter (config fault) before the router; maxStreamDuration, when not 0,
// is its HttpConnectionManager's max_stream_duration.
func ListenerWithFault(name, routeConfigName string, fault *faultv3.HTTPFault, maxStreamDuration time.Duration) *listenerv3.Listener {
	hcm := &hcmv3.HttpConnectionManager{
		RouteSpecifier: &hcmv3.HttpConnectionManager_Rds{Rds: &hcmv3.Rds{
			ConfigSource:    adsConfigSource(),
			RouteConfigName: routeConfigName,
		}},
	}
	if fault != nil {
		hcm.HttpFilters = append(hcm.HttpFilters, &hcmv3.HttpFilter{Name: FaultFilterName, ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: mustAny(fault)}})
	}
	hcm.HttpFilters = append(hcm.HttpFilters, routerOnly()...)
	if maxStreamDuration > 0 {
		hcm.CommonHttpProtocolOptions = &corev3.HttpProtocolOptions{MaxStreamDuration: durationpb.New(maxStreamDuration)}
	}
	return apiListener(name, hcm)
}

// FaultAbort aborts pct percent of RPCs with the gRPC status code.
func FaultAbort(code uint32, pct uint32) *faultv3.HTTPFault {
	return &faultv3.HTTPFault{Abort: &faultv3.FaultAbort{
		ErrorType:  &faultv3.FaultAbort_GrpcStatus{GrpcStatus: code},
		Percentage: &typev3.FractionalPercent{Numerator: pct, Denominator: typev3.FractionalPercent_HUNDRED},
	}}
}

// FaultDelay delays pct percent of RPCs by d.
func FaultDelay(d time.Duration, pct uint32) *faultv3.HTTPFault {
	return &faultv3.HTTPFault{Delay: &faultcommonv3.FaultDelay{
		FaultDelaySecifier: &faultcommonv3.FaultDelay_FixedDelay{FixedDelay: durationpb.New(d)},
		Percentage:         &typev3.FractionalPercent{Numerator: pct, Denominator: typev3.FractionalPercent_HUNDRED},
	}}
}

// FaultFromHeaders delays and aborts RPCs as their headers say (gRFC A33),
// up to 100% of them.
func FaultFromHeaders() *faultv3.HTTPFault {
	all := &typev3.FractionalPercent{Numerator: 100, Denominator: typev3.FractionalPercent_HUNDRED}
	return &faultv3.HTTPFault{
		Delay: &faultcommonv3.FaultDelay{FaultDelaySecifier: &faultcommonv3.FaultDelay_HeaderDelay_{HeaderDelay: &faultcommonv3.FaultDelay_HeaderDelay{}}, Percentage: all},
		Abort: &faultv3.FaultAbort{ErrorType: &faultv3.FaultAbort_HeaderAbort_{HeaderAbort: &faultv3.FaultAbort_HeaderAbort{}}, Percentage: all},
	}
}

// WithFaultOverride sets the fault filter's typed_per_filter_config of
// route r to fault, and returns r.
func WithFaultOverride(r *routev3.Route, fault *faultv3.HTTPFault) *routev3.Route {
	if r.TypedPerFilterConfig == nil {
		r.TypedPerFilterConfig = map[string]*anypb.Any{}
	}
	r.TypedPerFilterConfig[FaultFilterName] = mustAny(fault)
	return r
}

// WithDisabledFaultOverride sets the fault filter's typed_per_filter_config
// of route r to fault wrapped in a FilterConfig marked disabled, and
// returns r.
func WithDisabledFaultOverride(r *routev3.Route, fault *faultv3.HTTPFault) *routev3.Route {
	WithFaultOverride(r, fault)
	r.TypedPerFilterConfig[FaultFilterName] = mustAny(&routev3.FilterConfig{Config: r.TypedPerFilterConfig[FaultFilterName], Disabled: true})
	return r
}

// WithRetry sets the retry_policy of action a: retry on the gRPC codes
// named in on ("unavailable", ...), n retries, with the given backoff,
// and returns a.
func WithRetry(a *routev3.RouteAction, on string, n uint32, base, max time.Duration) *routev3.RouteAction {
	a.RetryPolicy = &routev3.RetryPolicy{
		RetryOn:    on,
		NumRetries: wrapperspb.UInt32(n),
		RetryBackOff: &routev3.RetryPolicy_RetryBackOff{
			BaseInterval: durationpb.New(base), MaxInterval: durationpb.New(max),
		},
	}
	return a
}

// WithMaxStreamDuration sets action a's max_stream_duration, and its
// grpc_timeout_header_max when headerMax is not 0, and returns a.
func WithMaxStreamDuration(a *routev3.RouteAction, d, headerMax time.Duration) *routev3.RouteAction {
	a.MaxStreamDuration = &routev3.RouteAction_MaxStreamDuration{MaxStreamDuration: durationpb.New(d)}
	if headerMax > 0 {
		a.MaxStreamDuration.GrpcTimeoutHeaderMax = durationpb.New(headerMax)
	}
	return a
}

// WithOutlierDetection sets c's outlier_detection: failure percentage
// ejection (threshold 50%, 3 endpoints and 5 RPCs at least) every
// interval, for base, and returns c.
func WithOutlierDetection(c *clusterv3.Cluster, interval, base time.Duration) *clusterv3.Cluster {
	c.OutlierDetection = &clusterv3.OutlierDetection{
		Interval:                       durationpb.New(interval),
		BaseEjectionTime:               durationpb.New(base),
		MaxEjectionTime:                durationpb.New(base),
		MaxEjectionPercent:             wrapperspb.UInt32(50),
		EnforcingSuccessRate:           wrapperspb.UInt32(0),
		EnforcingFailurePercentage:     wrapperspb.UInt32(100),
		FailurePercentageThreshold:     wrapperspb.UInt32(50),
		FailurePercentageMinimumHosts:  wrapperspb.UInt32(3),
		FailurePercentageRequestVolume: wrapperspb.UInt32(5),
	}
	return c
}
