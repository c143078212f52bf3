package rpctest

import (
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/xdslens/xdslens/xdsclient"
	"github.com/xdslens/xdslens/xdscreds"
	"github.com/xdslens/xdslens/xdsgrpc"
)

// DialTLS returns an xdslens channel to target, routed by pool, whose
// transport credentials apply each cluster's TLS settings (xdscreds, with
// plaintext for the clusters without them), closed when the test ends.
func DialTLS(t testing.TB, pool *xdsclient.Pool, target string) *grpc.ClientConn {
	t.Helper()
	creds, err := xdscreds.NewClientCredentials(xdscreds.ClientOptions{FallbackCreds: insecure.NewCredentials()})
	if err != nil {
		t.Fatal(err)
	}
	conn, err := grpc.NewClient(target, append(xdsgrpc.DialOptions(pool), grpc.WithTransportCredentials(creds))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}
