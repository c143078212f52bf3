package lrsserver_test

import (
	"context"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	lrsv3 "github.com/envoyproxy/go-control-plane/envoy/service/load_stats/v3"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/xdslens/xdslens/internal/testing/testmain"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/lrsserver"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, goleak.Cleanup(testmain.Exit)) }

// TestServer speaks LRS to the server as a client does: the first request
// is answered with the configuration, later ones are recorded, a new
// configuration reaches the open stream, and the stream survives a stop
// and restart as a new one.
func TestServer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	svc := lrsserver.NewService(lrsserver.Config{Interval: time.Second, Clusters: []string{"c1"}})
	srv, err := lrsserver.Listen(ctx, "127.0.0.1:0", svc)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	conn, err := grpc.NewClient("passthrough:///"+srv.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	stream, err := lrsv3.NewLoadReportingServiceClient(conn).StreamLoadStats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Send(&lrsv3.LoadStatsRequest{Node: &corev3.Node{Id: "n1"}}); err != nil {
		t.Fatal(err)
	}
	resp, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetLoadReportingInterval().AsDuration() != time.Second || len(resp.GetClusters()) != 1 || resp.GetClusters()[0] != "c1" {
		t.Errorf("first response %v, want interval 1s and cluster c1", resp)
	}
	if err := stream.Send(&lrsv3.LoadStatsRequest{ClusterStats: []*endpointv3.ClusterStats{{ClusterName: "c1", TotalDroppedRequests: 3}}}); err != nil {
		t.Fatal(err)
	}
	if err := svc.Wait(ctx, func() bool { return len(svc.Reports()) == 1 }); err != nil {
		t.Fatal(err)
	}
	if r := svc.Reports()[0]; r.Stream != 1 || r.Stats[0].GetTotalDroppedRequests() != 3 {
		t.Errorf("report %+v, want stream 1 with 3 drops", r)
	}
	if n := svc.Nodes(); len(n) != 1 || n[0].GetId() != "n1" {
		t.Errorf("nodes %v, want n1", n)
	}
	svc.SetConfig(lrsserver.Config{Interval: 2 * time.Second, SendAll: true})
	if resp, err = stream.Recv(); err != nil || !resp.GetSendAllClusters() || resp.GetLoadReportingInterval().AsDuration() != 2*time.Second {
		t.Errorf("after SetConfig: %v %v, want send_all_clusters every 2s", resp, err)
	}

	srv.Stop()
	if _, err := stream.Recv(); err == nil {
		t.Error("the stream outlived Stop")
	}
	if err := srv.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	stream, err = lrsv3.NewLoadReportingServiceClient(conn).StreamLoadStats(ctx, grpc.WaitForReady(true))
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Send(&lrsv3.LoadStatsRequest{Node: &corev3.Node{Id: "n2"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Recv(); err != nil {
		t.Fatal(err)
	}
	if err := svc.Wait(ctx, func() bool { return svc.Open() == 1 && len(svc.Nodes()) == 2 }); err != nil {
		t.Fatalf("after Restart: %v (open %d, nodes %v)", err, svc.Open(), svc.Nodes())
	}
	stream.CloseSend()
}
