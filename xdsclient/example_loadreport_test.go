package xdsclient_test

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/xdslens/xdslens/internal/xdswatch/demo/controlplane"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/lrsserver"
	"github.com/xdslens/xdslens/xdsclient"
	"github.com/xdslens/xdslens/xdsclient/bootstrap"
	"github.com/xdslens/xdslens/xdsclient/lrs"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
)

// reportLoad starts reporting the load of the cluster in res, whose
// lrs_server is self, to the server that sent it, and records one call,
// as a data plane does around each call to the cluster. The caller calls
// release when it stops using the cluster: the last release sends a final
// report.
func reportLoad(client *xdsclient.Client, res *xdsclient.Resource, callErr error) (release func(), err error) {
	c := res.Value.(*xdsresource.Cluster) // c.LRSServer is true
	load, release, err := client.ReportLoad(res.Server, c.Name, c.EDSServiceName)
	if err != nil {
		return nil, err
	}
	locality := lrs.Locality{Region: "europe-west1", Zone: "europe-west1-b"}
	load.CallStarted(locality)
	load.CallServerLoad(locality, "cpu_utilization", 0.4)
	load.CallFinished(locality, callErr) // succeeded when callErr is nil
	load.CallDropped("throttle")         // by drop category
	return release, nil
}

// A data plane reports the load of a cluster whose lrs_server is self to
// the control plane that sent the cluster, here one that serves LRS too.
func ExampleClient_ReportLoad() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	svc := lrsserver.NewService(lrsserver.Config{Interval: 20 * time.Millisecond, SendAll: true})
	cp, err := controlplane.Start(ctx, "127.0.0.1:0", controlplane.WithService(svc.Register))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cp.Stop()
	cp.SetResources(ctx, "example-node", "1", controlplane.ClusterWithLoadReporting("payments-backend", ""))

	cfg, err := bootstrap.Parse([]byte(`{
		"xds_servers": [{"server_uri": "` + cp.Addr() + `", "channel_creds": [{"type": "insecure"}]}],
		"node": {"id": "example-node"}
	}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	client, err := xdsclient.New(cfg, xdsclient.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()
	got := make(chan *xdsclient.Resource, 1)
	defer client.Watch(xdsresource.ClusterType, "payments-backend", xdsclient.WatcherFuncs{
		OnResourceChanged: func(r *xdsclient.Resource, err error) {
			if err == nil {
				got <- r
			}
		},
	})()

	release, err := reportLoad(client, <-got, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer release()
	// The next report carries the call.
	var issued, succeeded, dropped uint64
	err = svc.Wait(ctx, func() bool {
		issued, succeeded, dropped = 0, 0, 0
		for _, r := range svc.Reports() {
			for _, cs := range r.Stats {
				dropped += cs.GetTotalDroppedRequests()
				for _, ls := range cs.GetUpstreamLocalityStats() {
					issued += ls.GetTotalIssuedRequests()
					succeeded += ls.GetTotalSuccessfulRequests()
				}
			}
		}
		return issued > 0 && succeeded > 0 && dropped > 0
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("issued %d, succeeded %d, dropped %d\n", issued, succeeded, dropped)
	// Output:
	// issued 1, succeeded 1, dropped 1
}
