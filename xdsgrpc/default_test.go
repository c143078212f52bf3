package xdsgrpc_test

import (
	"context"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/xdslens/xdslens/internal/controlplane"
	"github.com/xdslens/xdslens/internal/rpctest"
	"github.com/xdslens/xdslens/internal/xdstest"
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
	t.Setenv(bootstrap.EnvBootstrapConfig, e.Bootstrap)
	t.Setenv(bootstrap.EnvBootstrapFile, "")
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
