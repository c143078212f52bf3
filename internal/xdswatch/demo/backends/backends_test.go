package backends_test

import (
	"context"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/xdslens/xdslens/internal/testing/testmain"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/backends"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, goleak.Cleanup(testmain.Exit)) }

func dial(t *testing.T, addr string) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient("passthrough:///"+addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return c
}

// TestBackend checks what a backend answers, that it names itself, that
// it holds RPCs until released, and that it stops and starts again on its
// address.
func TestBackend(t *testing.T) {
	b, err := backends.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer b.Stop()
	conn := dial(t, b.Addr())
	client := testgrpc.NewTestServiceClient(conn)
	var md metadata.MD
	resp, err := client.UnaryCall(ctx(t), &testpb.SimpleRequest{}, grpc.Header(&md), grpc.WaitForReady(true))
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetServerId() != b.Addr() || md.Get(backends.ServerHeader)[0] != b.Addr() {
		t.Errorf("server_id %q, header %v; want %s", resp.GetServerId(), md, b.Addr())
	}
	h, err := healthpb.NewHealthClient(conn).Check(ctx(t), &healthpb.HealthCheckRequest{})
	if err != nil || h.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Errorf("health: %v %v, want SERVING", h, err)
	}

	release := b.Hold()
	done := make(chan error, 1)
	go func() {
		_, err := client.EmptyCall(ctx(t), &testpb.Empty{})
		done <- err
	}()
	if err := b.WaitCalls(ctx(t), 2); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		t.Fatalf("held RPC returned %v before release", err)
	default:
	}
	release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := b.Calls(); got != 2 {
		t.Errorf("Calls() = %d, want 2", got)
	}

	b.Stop()
	if _, err := client.EmptyCall(ctx(t), &testpb.Empty{}); status.Code(err) != codes.Unavailable {
		t.Errorf("RPC to a stopped backend: %v, want UNAVAILABLE", err)
	}
	if err := b.Restart(); err != nil {
		t.Fatal(err)
	}
	if _, err := client.EmptyCall(ctx(t), &testpb.Empty{}, grpc.WaitForReady(true)); err != nil {
		t.Errorf("RPC after Restart: %v", err)
	}
}

// TestBlackhole checks that a connection to a Blackhole neither succeeds
// nor fails: an RPC waiting for it times out.
func TestBlackhole(t *testing.T) {
	h, err := backends.StartBlackhole()
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	c, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err = testgrpc.NewTestServiceClient(dial(t, h.Addr())).EmptyCall(c, &testpb.Empty{}, grpc.WaitForReady(true))
	if status.Code(err) != codes.DeadlineExceeded {
		t.Errorf("RPC to a blackhole: %v, want DEADLINE_EXCEEDED", err)
	}
}
