package admin_test

import (
	"io"
	"net"
	"slices"
	"testing"

	adminv3 "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	statusv3 "github.com/envoyproxy/go-control-plane/envoy/service/status/v3"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	channelzgrpc "google.golang.org/grpc/channelz/grpc_channelz_v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"

	"github.com/xdslens/xdslens/admin"
	"github.com/xdslens/xdslens/internal/testing/testmain"
	"github.com/xdslens/xdslens/internal/testing/xdstest"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/controlplane"
	"github.com/xdslens/xdslens/xdsclient"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, goleak.Cleanup(testmain.Exit)) }

const (
	testNodeID = "admin-test-node"
	testTarget = "admin-test"
)

// The names of the services Register adds.
const (
	csdsService       = "envoy.service.status.v3.ClientStatusDiscoveryService"
	channelzService   = "grpc.channelz.v1.Channelz"
	healthService     = "grpc.health.v1.Health"
	reflectionService = "grpc.reflection.v1.ServerReflection"
)

// startControlPlane runs a go-control-plane server on loopback serving the
// demo resources rooted at listener "demo" to every node.
func startControlPlane(t *testing.T) *controlplane.Server {
	t.Helper()
	ctx := xdstest.Context(t)
	srv, err := controlplane.Start(ctx, "127.0.0.1:0", controlplane.WithDefaultNode())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	if err := srv.SetResources(ctx, "", "1", controlplane.DemoResources("demo")...); err != nil {
		t.Fatal(err)
	}
	return srv
}

// serveAdmin registers the admin services over src on a new gRPC server on
// loopback and returns a connection to it.
func serveAdmin(t *testing.T, src xdsclient.Source, opts ...admin.Option) (*grpc.ClientConn, *admin.Services) {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	svcs := admin.Register(srv, src, opts...)
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = srv.Serve(lis)
	}()
	cc, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cc.Close()
		srv.Stop()
		<-served
	})
	return cc, svcs
}

// topChannel returns the channelz top channel whose target is target, or
// nil, reading every page of GetTopChannels.
func topChannel(t *testing.T, cz channelzgrpc.ChannelzClient, target string) *channelzgrpc.Channel {
	t.Helper()
	var start int64
	for {
		resp, err := cz.GetTopChannels(xdstest.Context(t), &channelzgrpc.GetTopChannelsRequest{StartChannelId: start})
		if err != nil {
			t.Fatalf("GetTopChannels: %v", err)
		}
		for _, ch := range resp.GetChannel() {
			if ch.GetData().GetTarget() == target {
				return ch
			}
			start = ch.GetRef().GetChannelId() + 1
		}
		if resp.GetEnd() || len(resp.GetChannel()) == 0 {
			return nil
		}
	}
}

// listServices asks server reflection for the services of the server.
func listServices(t *testing.T, cc *grpc.ClientConn) ([]string, error) {
	t.Helper()
	stream, err := reflectionpb.NewServerReflectionClient(cc).ServerReflectionInfo(xdstest.Context(t))
	if err != nil {
		return nil, err
	}
	defer stream.CloseSend()
	// A Send that finds the stream already ended by the server returns
	// io.EOF; its status is what Recv returns.
	if err := stream.Send(&reflectionpb.ServerReflectionRequest{MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{}}); err != nil && err != io.EOF {
		return nil, err
	}
	resp, err := stream.Recv()
	if err != nil {
		return nil, err
	}
	var names []string
	for _, s := range resp.GetListServicesResponse().GetService() {
		names = append(names, s.GetName())
	}
	slices.Sort(names)
	return names, nil
}

func check(t *testing.T, cc *grpc.ClientConn, service string) healthpb.HealthCheckResponse_ServingStatus {
	t.Helper()
	resp, err := healthpb.NewHealthClient(cc).Check(xdstest.Context(t), &healthpb.HealthCheckRequest{Service: service})
	if err != nil {
		t.Fatalf("health Check(%q): %v", service, err)
	}
	return resp.GetStatus()
}

// A pool client watching a listener of a real control plane, and one admin
// port over the pool: channelz lists the client's channel to the xDS
// server, READY, with the server's address as target; health says
// SERVING; reflection lists the four services; CSDS reports the listener.
// When the client closes, its channel leaves channelz.
func TestRegister(t *testing.T) {
	cp := startControlPlane(t)
	pool := xdsclient.NewPool(xdstest.Bootstrap{Servers: []string{cp.Addr()}, Node: `{"id": "` + testNodeID + `"}`}.Parse(t), xdstest.ClientOptions()...)
	c, release, err := pool.Get(testTarget)
	if err != nil {
		t.Fatal(err)
	}
	released := false
	defer func() {
		if !released {
			release()
		}
	}()
	rec := xdstest.NewWatcher()
	cancel := c.Watch(xdsresource.ListenerType, "demo", rec)
	defer cancel()
	rec.Expect(t, xdsclient.NotifyResource, 0)

	cc, svcs := serveAdmin(t, pool)
	cz := channelzgrpc.NewChannelzClient(cc)

	ch := topChannel(t, cz, cp.Addr())
	if ch == nil {
		t.Fatalf("channelz lists no top channel with target %q", cp.Addr())
	}
	if got := ch.GetData().GetState().GetState(); got != channelzgrpc.ChannelConnectivityState_READY {
		t.Errorf("xDS channel to %s is %v in channelz, want READY: the client has its listener", cp.Addr(), got)
	}
	if ch.GetData().GetCallsStarted() < 1 {
		t.Errorf("xDS channel reports %d calls started, want the ADS stream", ch.GetData().GetCallsStarted())
	}

	if got := check(t, cc, ""); got != healthpb.HealthCheckResponse_SERVING {
		t.Errorf("health of the overall service %v, want SERVING", got)
	}
	got, err := listServices(t, cc)
	if err != nil {
		t.Fatalf("reflection ListServices: %v", err)
	}
	for _, want := range []string{csdsService, channelzService, healthService, reflectionService} {
		if !slices.Contains(got, want) {
			t.Errorf("reflection lists %v, without %s", got, want)
		}
	}

	resp, err := statusv3.NewClientStatusDiscoveryServiceClient(cc).FetchClientStatus(xdstest.Context(t), &statusv3.ClientStatusRequest{})
	if err != nil {
		t.Fatalf("FetchClientStatus: %v", err)
	}
	if len(resp.GetConfig()) != 1 || resp.GetConfig()[0].GetClientScope() != testTarget {
		t.Fatalf("CSDS answered %v, want one ClientConfig scoped %q", resp, testTarget)
	}
	g := resp.GetConfig()[0].GetGenericXdsConfigs()
	if len(g) != 1 || g[0].GetName() != "demo" || g[0].GetClientStatus() != adminv3.ClientResourceStatus_ACKED {
		t.Errorf("CSDS entries %v, want lds demo ACKED", g)
	}

	// The client closes with its last reference: its channel is gone from
	// channelz once Close has returned.
	cancel()
	release()
	released = true
	if ch := topChannel(t, cz, cp.Addr()); ch != nil {
		t.Errorf("after the client closed, channelz still lists its channel: %v", ch.GetData())
	}

	svcs.Shutdown()
	if got := check(t, cc, ""); got != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Errorf("health after Shutdown %v, want NOT_SERVING", got)
	}
}

// A channel that cannot connect shows in channelz in the state the client
// sees, not READY.
func TestChannelzUnreachableServer(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	lis.Close() // nothing listens there any more
	hooks := make(chan xdsclient.ServerFailureInfo, 100)
	c := xdstest.NewClient(t, xdstest.Bootstrap{Servers: []string{addr}, Node: `{"id": "` + testNodeID + `"}`}.Parse(t),
		xdstest.ClientOptions(xdsclient.WithHooks(&xdsclient.Hooks{ServerFailure: func(i xdsclient.ServerFailureInfo) {
			select {
			case hooks <- i:
			default:
			}
		}}))...)
	defer c.Watch(xdsresource.ClusterType, "c1", xdstest.NewWatcher())()
	select {
	case <-hooks:
	case <-xdstest.Context(t).Done():
		t.Fatal("no server failure for an address nothing listens on")
	}
	cc, _ := serveAdmin(t, c)
	ch := topChannel(t, channelzgrpc.NewChannelzClient(cc), addr)
	if ch == nil {
		t.Fatalf("channelz lists no channel with target %q", addr)
	}
	if got := ch.GetData().GetState().GetState(); got == channelzgrpc.ChannelConnectivityState_READY {
		t.Errorf("channel to an address nothing listens on is %v", got)
	}
}

// WithHealthServer registers the health server given, so the process sets
// its own services there; WithoutReflection leaves reflection out.
func TestOptions(t *testing.T) {
	h := health.NewServer()
	h.SetServingStatus("my.Service", healthpb.HealthCheckResponse_NOT_SERVING)
	c := xdstest.NewClient(t, xdstest.Bootstrap{Servers: []string{"127.0.0.1:1"}, Node: `{"id": "` + testNodeID + `"}`}.Parse(t), xdstest.ClientOptions()...)
	cc, svcs := serveAdmin(t, c, admin.WithHealthServer(h), admin.WithoutReflection())
	if svcs.Health() != h {
		t.Errorf("Health() is not the server given to WithHealthServer")
	}
	if got := check(t, cc, "my.Service"); got != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Errorf("my.Service %v, want the NOT_SERVING set on the server given", got)
	}
	if got := check(t, cc, ""); got != healthpb.HealthCheckResponse_SERVING {
		t.Errorf("overall %v, want SERVING", got)
	}
	h.SetServingStatus("my.Service", healthpb.HealthCheckResponse_SERVING)
	if got := check(t, cc, "my.Service"); got != healthpb.HealthCheckResponse_SERVING {
		t.Errorf("my.Service %v after the process set SERVING", got)
	}
	_, err := listServices(t, cc)
	if status.Code(err) != codes.Unimplemented {
		t.Errorf("reflection with WithoutReflection: %v, want Unimplemented", err)
	}
}
