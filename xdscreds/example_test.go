package xdscreds_test

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/xdslens/xdslens/internal/backends"
	"github.com/xdslens/xdslens/internal/controlplane"
	"github.com/xdslens/xdslens/xdsclient"
	"github.com/xdslens/xdslens/xdsclient/bootstrap"
	"github.com/xdslens/xdslens/xdscreds"
	"github.com/xdslens/xdslens/xdsgrpc"
)

// newSecureChannel returns a channel to the xDS listener "payments" whose
// connections are made as each cluster says: TLS or mutual TLS for a
// cluster whose transport_socket asks for it, with the certificates of
// the bootstrap's certificate providers, and plaintext for the others.
func newSecureChannel(pool *xdsclient.Pool) (*grpc.ClientConn, error) {
	creds, err := xdscreds.NewClientCredentials(xdscreds.ClientOptions{FallbackCreds: insecure.NewCredentials()})
	if err != nil {
		return nil, err
	}
	return grpc.NewClient("xdslens:///payments", append(xdsgrpc.DialOptions(pool), grpc.WithTransportCredentials(creds))...)
}

// A channel with xDS credentials: its cluster has no transport_socket, so
// its connections are made by the fallback credentials, in plaintext.
func ExampleNewClientCredentials() {
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
	conn, err := newSecureChannel(pool)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer conn.Close()
	_, err = healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
	fmt.Println("health check:", err)
	// Output:
	// health check: <nil>
}
