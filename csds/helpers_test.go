package csds_test

import (
	"net"
	"testing"

	statusv3 "github.com/envoyproxy/go-control-plane/envoy/service/status/v3"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdslens/xdslens/csds"
	"github.com/xdslens/xdslens/internal/testing/testmain"
	"github.com/xdslens/xdslens/internal/testing/xdstest"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/controlplane"
	"github.com/xdslens/xdslens/xdsclient"
	"github.com/xdslens/xdslens/xdsclient/bootstrap"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, goleak.Cleanup(testmain.Exit)) }

const (
	testNodeID = "csds-test-node"
	testTarget = "test-target"
)

var (
	cdsURL = xdsresource.ClusterType.TypeURL()
	ldsURL = xdsresource.ListenerType.TypeURL()
)

// bootstrapFor returns a bootstrap with one insecure server at addr, the
// given server features, and a node with an ID, a cluster and metadata.
func bootstrapFor(t testing.TB, addr string, features ...string) *bootstrap.Config {
	t.Helper()
	return xdstest.Bootstrap{
		Servers:  []string{addr},
		Features: features,
		Node:     `{"id": "` + testNodeID + `", "cluster": "csds-cluster", "metadata": {"team": "xdslens"}}`,
	}.Parse(t)
}

func newClient(t testing.TB, cfg *bootstrap.Config, opts ...xdsclient.Option) *xdsclient.Client {
	t.Helper()
	return xdstest.NewClient(t, cfg, xdstest.ClientOptions(append([]xdsclient.Option{xdsclient.WithTarget(testTarget)}, opts...)...)...)
}

// serveCSDS serves a csds.Server over src on loopback and returns a CSDS
// client connected to it.
func serveCSDS(t testing.TB, src xdsclient.Source, opts ...csds.Option) statusv3.ClientStatusDiscoveryServiceClient {
	t.Helper()
	return serve(t, csds.NewServer(src, opts...))
}

// serve serves s on loopback and returns a CSDS client connected to it.
func serve(t testing.TB, s *csds.Server) statusv3.ClientStatusDiscoveryServiceClient {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	s.Register(srv)
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
	return statusv3.NewClientStatusDiscoveryServiceClient(cc)
}

func fetch(t testing.TB, cl statusv3.ClientStatusDiscoveryServiceClient) *statusv3.ClientStatusResponse {
	t.Helper()
	resp, err := cl.FetchClientStatus(xdstest.Context(t), &statusv3.ClientStatusRequest{})
	if err != nil {
		t.Fatalf("FetchClientStatus: %v", err)
	}
	return resp
}

// only returns the one generic_xds_config of the one ClientConfig of resp.
func only(t testing.TB, resp *statusv3.ClientStatusResponse) (*statusv3.ClientConfig, *statusv3.ClientConfig_GenericXdsConfig) {
	t.Helper()
	if len(resp.GetConfig()) != 1 {
		t.Fatalf("%d ClientConfigs, want 1: %v", len(resp.GetConfig()), resp)
	}
	cfg := resp.GetConfig()[0]
	if len(cfg.GetGenericXdsConfigs()) != 1 {
		t.Fatalf("%d generic_xds_configs, want 1: %v", len(cfg.GetGenericXdsConfigs()), cfg)
	}
	return cfg, cfg.GetGenericXdsConfigs()[0]
}

// fixture is a client connected to a scripted ADS server and served over
// CSDS.
type fixture struct {
	xdstest.Script
	c    *xdsclient.Client
	csds statusv3.ClientStatusDiscoveryServiceClient
}

func newFixture(t *testing.T, features []string, opts ...xdsclient.Option) *fixture {
	t.Helper()
	f := &fixture{Script: xdstest.Script{T: t, Ctx: xdstest.Context(t), Srv: xdstest.NewADSServer(t)}}
	f.c = newClient(t, bootstrapFor(t, f.Srv.Addr(), features...), opts...)
	f.csds = serveCSDS(t, f.c)
	return f
}

// watch starts watching cds name and returns the stream on which the
// client asked for it.
func (f *fixture) watch(name string) (*xdstest.Watcher, *xdstest.Stream) {
	f.T.Helper()
	return f.WatchCluster(f.c, name)
}

// watchCached watches cds name and has the server deliver version 1 of it,
// whose Any it returns.
func (f *fixture) watchCached(name string) (*xdstest.Watcher, *xdstest.Stream, *anypb.Any) {
	f.T.Helper()
	rec, st := f.watch(name)
	resp := f.Send(st, xdstest.Response(cdsURL, "1", controlplane.Cluster(name, name)))
	rec.Expect(f.T, xdsclient.NotifyResource, 0)
	f.RecvType(st, cdsURL) // ACK
	return rec, st, resp.GetResources()[0]
}

func (f *fixture) fetch() *statusv3.ClientStatusResponse {
	f.T.Helper()
	return fetch(f.T, f.csds)
}
