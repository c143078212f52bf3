package xdsgrpc_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/xdslens/xdslens/internal/testing/rpctest"
	"github.com/xdslens/xdslens/internal/testing/xdstest"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/controlplane"
	"github.com/xdslens/xdslens/xdsclient/bootstrap"
)

// defaultRegistrationRuns counts the runs of TestDefaultRegistration in
// this process.
var defaultRegistrationRuns atomic.Int32

// TestDefaultRegistration dials "xdslens:///svc" with no resolver option:
// importing the package registered the scheme with the default pool, whose
// bootstrap comes from GRPC_XDS_BOOTSTRAP_CONFIG. No other test of this
// binary uses the default pool, whose bootstrap is read once.
func TestDefaultRegistration(t *testing.T) {
	if defaultRegistrationRuns.Add(1) > 1 {
		t.Skip("the default pool read its bootstrap in this test's first run (go test -count), and reads it once per process")
	}
	e := rpctest.NewEnv(t, 1)
	t.Setenv(bootstrap.EnvBootstrapFile, "")

	// A bootstrap that cannot be read fails every RPC, with a message
	// that quotes its 3 MiB strings within bounds; the default pool reads
	// it again at the next channel's first RPC.
	t.Setenv(bootstrap.EnvBootstrapConfig, `{"xds_servers": [{"server_uri": "s:1", "channel_creds": [{"type": "`+strings.Repeat("t", 3<<20)+`"}]}]}`)
	bad, err := grpc.NewClient("xdslens:///svc", grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	o := rpctest.Call(xdstest.Context(t), bad, "/pkg.Svc/M")
	bad.Close()
	if msg := status.Convert(o.Err).Message(); status.Code(o.Err) != codes.Unavailable || len(msg) > 17<<10 ||
		!strings.Contains(msg, "no supported type among") || !strings.Contains(msg, "more bytes]") {
		t.Errorf("RPC with a bootstrap of a 3 MiB channel_creds type: %v, message of %d bytes %.200q", status.Code(o.Err), len(msg), msg)
	}

	t.Setenv(bootstrap.EnvBootstrapConfig, e.Bootstrap)
	e.Set(controlplane.Listener("svc", "svc-route"),
		rpctest.RouteConfig("svc-route", rpctest.Route(rpctest.PrefixMatch("/"), rpctest.ToCluster("c"))),
		controlplane.Cluster("c", ""), controlplane.Endpoints("c", e.Addr(0)))
	conn, err := grpc.NewClient("xdslens:///svc", grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if !rpctest.Poll(xdstest.Context(t), func(ctx context.Context) bool {
		o := rpctest.Call(ctx, conn, "/pkg.Svc/M")
		return o.Err == nil && o.Backend == e.Addr(0)
	}) {
		t.Fatal("no RPC through the default registration reached the backend")
	}
}
