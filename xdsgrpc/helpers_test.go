package xdsgrpc_test

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/xdslens/xdslens/internal/backends"
	"github.com/xdslens/xdslens/internal/controlplane"
	"github.com/xdslens/xdslens/internal/xdstest"
	"github.com/xdslens/xdslens/xdsclient"
	"github.com/xdslens/xdslens/xdsgrpc"
)

const nodeID = "dataplane-test"

// env is a go-control-plane server, backends, and a pool of xDS clients of
// that server, for channels through xdslens (dial) and through grpc-go's own
// xDS resolver (dialGRPC), both configured by the same bootstrap.
type env struct {
	t         testing.TB
	cp        *controlplane.Server
	backends  []*backends.Backend
	bootstrap string
	pool      *xdsclient.Pool
	builder   *xdsgrpc.Builder
	version   int
}

func newEnv(t testing.TB, nBackends int, opts ...xdsgrpc.Option) *env {
	t.Helper()
	ctx := xdstest.Context(t)
	cp, err := controlplane.Start(ctx, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cp.Stop)
	e := &env{t: t, cp: cp}
	for range nBackends {
		b, err := backends.Start()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(b.Stop)
		e.backends = append(e.backends, b)
	}
	bs := xdstest.Bootstrap{Servers: []string{cp.Addr()}, Node: fmt.Sprintf(`{"id": %q}`, nodeID)}
	e.bootstrap = bs.JSON()
	e.pool = xdsclient.NewPool(bs.Parse(t), xdstest.ClientOptions()...)
	e.builder = xdsgrpc.NewBuilder(e.pool, opts...)
	return e
}

// addr returns the address of backend i.
func (e *env) addr(i int) string { return e.backends[i].Addr() }

// set serves resources as the next version of the configuration.
func (e *env) set(resources ...proto.Message) {
	e.t.Helper()
	e.version++
	if err := e.cp.SetResources(xdstest.Context(e.t), nodeID, strconv.Itoa(e.version), resources...); err != nil {
		e.t.Fatal(err)
	}
}

// dial returns a channel to target through xdslens.
func (e *env) dial(target string, opts ...grpc.DialOption) *grpc.ClientConn {
	e.t.Helper()
	opts = append([]grpc.DialOption{grpc.WithResolvers(e.builder), grpc.WithTransportCredentials(insecure.NewCredentials())}, opts...)
	conn, err := grpc.NewClient(target, opts...)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { conn.Close() })
	return conn
}

// outcome is what one RPC saw.
type outcome struct {
	backend string // the address of the backend that answered, "" when none
	cluster string
	err     error
}

// call makes one unary RPC of method on conn, with md as metadata pairs,
// and says where it went. The backends answer every method (unknown ones
// with UNIMPLEMENTED), so any method name can be routed.
func call(ctx context.Context, conn *grpc.ClientConn, method string, md ...string) outcome {
	var p peer.Peer
	var info xdsgrpc.CallInfo
	if len(md) > 0 {
		ctx = metadata.AppendToOutgoingContext(ctx, md...)
	}
	err := conn.Invoke(xdsgrpc.WithCallInfo(ctx, &info), method, &emptypb.Empty{}, &emptypb.Empty{}, grpc.Peer(&p))
	o := outcome{cluster: info.Cluster, err: err}
	if p.Addr != nil {
		o.backend = p.Addr.String()
		if isUnimplemented(err) {
			o.err = nil
		}
	}
	return o
}

func isUnimplemented(err error) bool { return status.Code(err) == codes.Unimplemented }

// grpcCode returns the name of err's status code.
func grpcCode(err error) string { return status.Code(err).String() }

// poll makes RPCs through cond until it returns true or ctx ends, and
// reports whether it did. What RPCs see changes with connections and
// configs that the test cannot wait on directly, so it asks again every
// 10ms; each cond gets a context of at most a second.
func poll(ctx context.Context, cond func(ctx context.Context) bool) bool {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		c, cancel := context.WithTimeout(ctx, time.Second)
		ok := cond(c)
		cancel()
		if ok {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-tick.C:
		}
	}
}

// The resources.

func route(match *routev3.RouteMatch, action *routev3.RouteAction) *routev3.Route {
	return &routev3.Route{Match: match, Action: &routev3.Route_Route{Route: action}}
}

func prefixMatch(p string) *routev3.RouteMatch {
	return &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: p}}
}

func pathMatch(p string) *routev3.RouteMatch {
	return &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Path{Path: p}}
}

func regexMatch(re string) *routev3.RouteMatch {
	return &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_SafeRegex{SafeRegex: &matcherv3.RegexMatcher{Regex: re}}}
}

func withHeader(m *routev3.RouteMatch, name, exact string) *routev3.RouteMatch {
	m.Headers = append(m.Headers, &routev3.HeaderMatcher{Name: name, HeaderMatchSpecifier: &routev3.HeaderMatcher_StringMatch{
		StringMatch: &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Exact{Exact: exact}},
	}})
	return m
}

func toCluster(name string) *routev3.RouteAction {
	return &routev3.RouteAction{ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: name}}
}

// toWeighted splits by weights given as name, weight, name, weight, ...
func toWeighted(nw ...any) *routev3.RouteAction {
	wc := &routev3.WeightedCluster{}
	for i := 0; i < len(nw); i += 2 {
		wc.Clusters = append(wc.Clusters, &routev3.WeightedCluster_ClusterWeight{Name: nw[i].(string), Weight: wrapperspb.UInt32(uint32(nw[i+1].(int)))})
	}
	return &routev3.RouteAction{ClusterSpecifier: &routev3.RouteAction_WeightedClusters{WeightedClusters: wc}}
}

func routeConfig(name string, routes ...*routev3.Route) *routev3.RouteConfiguration {
	return &routev3.RouteConfiguration{Name: name, VirtualHosts: []*routev3.VirtualHost{{Name: name + "-vh", Domains: []string{"*"}, Routes: routes}}}
}

// locality is one locality of an endpoints resource.
type locality struct {
	zone     string
	weight   uint32
	priority uint32
	addrs    []string
}

func endpoints(name string, ls ...locality) *endpointv3.ClusterLoadAssignment {
	cla := &endpointv3.ClusterLoadAssignment{ClusterName: name}
	for _, l := range ls {
		le := &endpointv3.LocalityLbEndpoints{
			Locality:            &corev3.Locality{Region: "r", Zone: l.zone},
			LoadBalancingWeight: wrapperspb.UInt32(l.weight),
			Priority:            l.priority,
		}
		for _, a := range l.addrs {
			host, port, _ := net.SplitHostPort(a)
			p, _ := strconv.Atoi(port)
			le.LbEndpoints = append(le.LbEndpoints, &endpointv3.LbEndpoint{
				HostIdentifier: &endpointv3.LbEndpoint_Endpoint{Endpoint: &endpointv3.Endpoint{Address: &corev3.Address{Address: &corev3.Address_SocketAddress{
					SocketAddress: &corev3.SocketAddress{Address: host, PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: uint32(p)}},
				}}}},
				HealthStatus: corev3.HealthStatus_HEALTHY,
			})
		}
		cla.Endpoints = append(cla.Endpoints, le)
	}
	return cla
}
