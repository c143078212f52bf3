package xdsgrpc_test

import (
	"context"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/xdslens/xdslens/internal/controlplane"
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
	e := newEnv(t, 1)
	t.Setenv(bootstrap.EnvBootstrapConfig, e.bootstrap)
	t.Setenv(bootstrap.EnvBootstrapFile, "")
	e.set(controlplane.Listener("svc", "svc-route"),
		routeConfig("svc-route", route(prefixMatch("/"), toCluster("c"))),
		controlplane.Cluster("c", ""), controlplane.Endpoints("c", e.addr(0)))
	conn, err := grpc.NewClient("xdslens:///svc", grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if !poll(xdstest.Context(t), func(ctx context.Context) bool {
		o := call(ctx, conn, "/pkg.Svc/M")
		return o.err == nil && o.backend == e.addr(0)
	}) {
		t.Fatal("no RPC through the default registration reached the backend")
	}
}
