package xdsgrpc_test

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/xdslens/xdslens/internal/xdswatch/demo/backends"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/controlplane"
	"github.com/xdslens/xdslens/xdsclient"
	"github.com/xdslens/xdslens/xdsclient/bootstrap"
	"github.com/xdslens/xdslens/xdsgrpc"
)

// newChannel returns a channel to the xDS listener "payments": its RPCs
// are routed by the resources that the pool's client for the target gets
// from the control plane.
func newChannel(pool *xdsclient.Pool) (*grpc.ClientConn, error) {
	return grpc.NewClient("xdslens:///payments", append(xdsgrpc.DialOptions(pool),
		grpc.WithTransportCredentials(insecure.NewCredentials()))...)
}

// check makes one health check on conn and says where it went, or how it
// failed: always with UNAVAILABLE when the control plane is the cause.
func check(ctx context.Context, conn *grpc.ClientConn) string {
	var info xdsgrpc.CallInfo
	ctx = xdsgrpc.WithCallInfo(ctx, &info)
	if _, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{}); err != nil {
		return "failed with " + status.Code(err).String()
	}
	return "answered by cluster " + info.Cluster
}

// A channel routed by xdslens: the control plane sends the route to the
// cluster and the cluster's endpoint, and RPCs follow.
func ExampleDialOptions() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	backend, err := backends.Start()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer backend.Stop()
	cp, err := controlplane.Start(ctx, "127.0.0.1:0")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cp.Stop()
	cp.SetResources(ctx, "example-node", "1",
		controlplane.Listener("payments", "payments-route"),
		controlplane.RouteConfig("payments-route", []string{"*"}, "payments-backend"),
		controlplane.Cluster("payments-backend", ""),
		controlplane.Endpoints("payments-backend", backend.Addr()))

	cfg, err := bootstrap.Parse([]byte(`{
		"xds_servers": [{"server_uri": "` + cp.Addr() + `", "channel_creds": [{"type": "insecure"}]}],
		"node": {"id": "example-node"}
	}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	pool := xdsclient.NewPool(cfg, xdsclient.WithLogger(slog.New(slog.DiscardHandler)))
	conn, err := newChannel(pool)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer conn.Close()
	conn.Connect()
	fmt.Println(check(ctx, conn))

	// The control plane deletes the listener and the client is told so
	// (fail_on_data_errors is not set): RPCs go on with the cached
	// config (gRFC A88).
	cp.SetResources(ctx, "example-node", "2",
		controlplane.RouteConfig("payments-route", []string{"*"}, "payments-backend"),
		controlplane.Cluster("payments-backend", ""),
		controlplane.Endpoints("payments-backend", backend.Addr()))
	fmt.Println(check(ctx, conn))
	// Output:
	// answered by cluster payments-backend
	// answered by cluster payments-backend
}
