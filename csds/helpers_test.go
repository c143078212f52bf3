package csds_test

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	statusv3 "github.com/envoyproxy/go-control-plane/envoy/service/status/v3"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdslens/xdslens/csds"
	"github.com/xdslens/xdslens/internal/controlplane"
	"github.com/xdslens/xdslens/internal/xdstest"
	"github.com/xdslens/xdslens/xdsclient"
	"github.com/xdslens/xdslens/xdsclient/bootstrap"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const (
	testNodeID  = "csds-test-node"
	testTarget  = "test-target"
	testTimeout = 10 * time.Second
)

var (
	cdsURL = xdsresource.ClusterType.TypeURL()
	ldsURL = xdsresource.ListenerType.TypeURL()
)

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

// bootstrapFor returns a bootstrap with one insecure server at addr, the
// given server features, and a node with an ID, a cluster and metadata.
func bootstrapFor(t testing.TB, addr string, features ...string) *bootstrap.Config {
	t.Helper()
	fs := ""
	if len(features) > 0 {
		fs = `, "server_features": ["` + strings.Join(features, `", "`) + `"]`
	}
	cfg, err := bootstrap.Parse([]byte(fmt.Sprintf(`{
		"xds_servers": [{"server_uri": %q, "channel_creds": [{"type": "insecure"}]%s}],
		"node": {"id": %q, "cluster": "csds-cluster", "metadata": {"team": "xdslens"}}
	}`, addr, fs, testNodeID)))
	if err != nil {
		t.Fatalf("bootstrap: %v", err)
	}
	return cfg
}

// clientOptions suit tests: quick retries, A88 handling, no log output.
func clientOptions(opts ...xdsclient.Option) []xdsclient.Option {
	return append([]xdsclient.Option{
		xdsclient.WithBackoff(func(int) time.Duration { return 10 * time.Millisecond }),
		xdsclient.WithLegacyDataErrorHandling(false),
		xdsclient.WithLogger(slog.New(slog.DiscardHandler)),
	}, opts...)
}

func newClient(t testing.TB, cfg *bootstrap.Config, opts ...xdsclient.Option) *xdsclient.Client {
	t.Helper()
	c, err := xdsclient.New(cfg, clientOptions(append([]xdsclient.Option{xdsclient.WithTarget(testTarget)}, opts...)...)...)
	if err != nil {
		t.Fatalf("xdsclient.New: %v", err)
	}
	t.Cleanup(c.Close)
	return c
}

// serveCSDS serves a csds.Server over src on loopback and returns a CSDS
// client connected to it.
func serveCSDS(t testing.TB, src csds.Source, opts ...csds.Option) statusv3.ClientStatusDiscoveryServiceClient {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	csds.NewServer(src, opts...).Register(srv)
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
	resp, err := cl.FetchClientStatus(ctxT(t), &statusv3.ClientStatusRequest{})
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

// event is one watcher callback.
type event struct {
	kind xdsclient.NotificationKind
	res  *xdsclient.Resource
	err  error
}

// recorder is a Watcher that lets a test wait for its callbacks.
type recorder struct{ ch chan event }

func newRecorder() *recorder { return &recorder{ch: make(chan event, 100)} }

func (r *recorder) ResourceChanged(res *xdsclient.Resource, err error) {
	if err != nil {
		r.ch <- event{kind: xdsclient.NotifyResourceError, err: err}
		return
	}
	r.ch <- event{kind: xdsclient.NotifyResource, res: res}
}

func (r *recorder) AmbientError(err error) {
	r.ch <- event{kind: xdsclient.NotifyAmbientError, err: err}
}

// expect waits for the next callback and checks its kind and, for an
// error, its code.
func (r *recorder) expect(t testing.TB, kind xdsclient.NotificationKind, code codes.Code) event {
	t.Helper()
	select {
	case e := <-r.ch:
		if e.kind != kind {
			t.Fatalf("got a %v callback (%v), want %v", e.kind, e.err, kind)
		}
		if kind != xdsclient.NotifyResource && status.Code(e.err) != code {
			t.Fatalf("got %v, want code %v", e.err, code)
		}
		return e
	case <-time.After(testTimeout):
		t.Fatalf("no %v callback within %v", kind, testTimeout)
		return event{}
	}
}

// fixture is a client connected to a scripted ADS server and served over
// CSDS.
type fixture struct {
	t    *testing.T
	ctx  context.Context
	srv  *xdstest.ADSServer
	c    *xdsclient.Client
	csds statusv3.ClientStatusDiscoveryServiceClient
}

func newFixture(t *testing.T, features []string, opts ...xdsclient.Option) *fixture {
	t.Helper()
	f := &fixture{t: t, ctx: ctxT(t), srv: xdstest.NewADSServer(t)}
	f.c = newClient(t, bootstrapFor(t, f.srv.Addr(), features...), opts...)
	f.csds = serveCSDS(t, csds.ForClient(f.c))
	return f
}

func (f *fixture) stream() *xdstest.Stream {
	f.t.Helper()
	st, err := f.srv.NextStream(f.ctx)
	if err != nil {
		f.t.Fatalf("waiting for an ADS stream: %v", err)
	}
	return st
}

func (f *fixture) recv(st *xdstest.Stream, typeURL string) *discoveryv3.DiscoveryRequest {
	f.t.Helper()
	req, err := st.RecvType(f.ctx, typeURL)
	if err != nil {
		f.t.Fatalf("waiting for a %s request: %v", typeURL, err)
	}
	return req
}

func (f *fixture) send(st *xdstest.Stream, resp *discoveryv3.DiscoveryResponse) *discoveryv3.DiscoveryResponse {
	f.t.Helper()
	if err := st.Send(resp); err != nil {
		f.t.Fatalf("send: %v", err)
	}
	return resp
}

// watch starts watching cds name and returns the stream on which the
// client asked for it.
func (f *fixture) watch(name string) (*recorder, *xdstest.Stream) {
	f.t.Helper()
	rec := newRecorder()
	f.t.Cleanup(f.c.Watch(xdsresource.ClusterType, name, rec))
	st := f.stream()
	f.recv(st, cdsURL)
	return rec, st
}

// watchCached watches cds name and has the server deliver version 1 of it,
// whose Any it returns.
func (f *fixture) watchCached(name string) (*recorder, *xdstest.Stream, *anypb.Any) {
	f.t.Helper()
	rec, st := f.watch(name)
	resp := f.send(st, xdstest.Response(cdsURL, "1", controlplane.Cluster(name, name)))
	rec.expect(f.t, xdsclient.NotifyResource, 0)
	f.recv(st, cdsURL) // ACK
	return rec, st, resp.GetResources()[0]
}

func (f *fixture) fetch() *statusv3.ClientStatusResponse {
	f.t.Helper()
	return fetch(f.t, f.csds)
}
