package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/xdslens/xdslens/internal/testing/testmain"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/controlplane"
)

// TestWatch runs watch against a control plane on loopback: it prints the
// cluster, then the ambient NOT_FOUND of its deletion, and returns once
// its context is done, leaving no goroutine behind.
func TestWatch(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cp, err := controlplane.Start(ctx, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer cp.Stop()
	if err := cp.SetResources(ctx, "node-1", "1", controlplane.Cluster("payments-backend", "")); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GRPC_XDS_BOOTSTRAP", "")
	t.Setenv("GRPC_XDS_BOOTSTRAP_CONFIG", fmt.Sprintf(`{"xds_servers": [{"server_uri": %q, "channel_creds": [{"type": "insecure"}]}], "node": {"id": "node-1"}}`, cp.Addr()))

	r, w := io.Pipe()
	watchCtx, stop := context.WithCancel(ctx)
	result := make(chan error, 1)
	go func() {
		result <- watch(watchCtx, "payments-backend", w)
		w.Close()
	}()
	lines := bufio.NewScanner(r)
	next := func() string {
		t.Helper()
		if !lines.Scan() {
			t.Fatalf("no more output: %v", lines.Err())
		}
		return lines.Text()
	}
	if got, want := next(), `use cluster payments-backend: EDS service "payments-backend", round_robin, max_requests 1024`; got != want {
		t.Errorf("first line %q, want %q", got, want)
	}
	if err := cp.SetResources(ctx, "node-1", "2"); err != nil {
		t.Fatal(err)
	}
	if got, want := next(), "keep using the cluster: rpc error: code = NotFound desc = "; len(got) < len(want) || got[:len(want)] != want {
		t.Errorf("after the deletion: %q, want it to start with %q", got, want)
	}
	stop()
	for lines.Scan() {
		t.Errorf("more output: %s", lines.Text())
	}
	if err := <-result; err != nil {
		t.Errorf("watch: %v", err)
	}
}

// TestMain ends the test binary without the race detector's pause at exit.
func TestMain(m *testing.M) { testmain.Run(m) }
