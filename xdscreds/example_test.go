package xdscreds_test

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/xdslens/xdslens/internal/testing/rpctest"
	"github.com/xdslens/xdslens/xdsclient"
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
	pool, stop, err := rpctest.StartPayments(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer stop()
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
