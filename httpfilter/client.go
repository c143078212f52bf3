package httpfilter

import "context"

// ClientFilter is a Filter that xdslens channels run, before each RPC
// (gRFC A39).
type ClientFilter interface {
	Filter
	// BuildClientInterceptor returns what runs the filter for the RPCs of
	// one route and cluster: cfg is the filter's config (from ParseConfig),
	// override the most specific override (from ParseOverride: the
	// weighted cluster's, else the route's, else the virtual host's; nil
	// when none). A nil interceptor means the filter has nothing to do for
	// these RPCs. It is called when the channel's configuration changes,
	// never per RPC.
	BuildClientInterceptor(cfg, override Config) (ClientInterceptor, error)
}

// ClientInterceptor runs a client filter for the RPCs of one route and
// cluster. It is called concurrently, once per RPC, when the RPC starts,
// in the order of the filters, before the RPC is sent.
type ClientInterceptor interface {
	// Intercept returns the context that the next filter and the RPC get
	// (ctx itself when the filter adds nothing), and a func to call once
	// when the RPC ends (nil when there is nothing to do then); or an
	// error, a gRPC status, that ends the RPC at once, unsent. It may
	// wait (a delay), returning ctx's error when ctx ends first.
	Intercept(ctx context.Context, call *ClientCall) (context.Context, func(), error)
}

// ClientCall is what a client filter knows of one RPC.
type ClientCall struct {
	// Method is the RPC's full method name, "/pkg.Service/Method".
	Method string
	// Cluster is the cluster the RPC's route chose.
	Cluster string
	// Report, when set, is told what the filter did to the RPC (a fault
	// it injected), for the channel's hooks; a filter need not call it.
	Report func(ClientEvent)
}

// ClientEvent is what a client filter reports of one RPC.
type ClientEvent struct {
	// Filter names the filter's kind, such as "fault".
	Filter string
	// Action is what it did: for the fault filter "delay" or "abort".
	Action string
	// Detail says more: the delay, or the status code.
	Detail string
}
