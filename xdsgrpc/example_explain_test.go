package xdsgrpc_test

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	"github.com/xdslens/xdslens/internal/testing/rpctest"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/backends"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/controlplane"
	"github.com/xdslens/xdslens/xdsclient"
	"github.com/xdslens/xdslens/xdsclient/bootstrap"
	"github.com/xdslens/xdslens/xdsgrpc"
)

// whyCanary says where conn, a channel of b, would send a charge of the
// canary lane, and why, without sending it.
func whyCanary(b *xdsgrpc.Builder, conn *grpc.ClientConn) string {
	x, err := b.Explain(conn, "/payments.Payments/Charge", metadata.Pairs("x-lane", "canary"))
	if err != nil {
		return err.Error()
	}
	return x.Reason
}

// printHistory prints what changed in each config the channels of b had.
func printHistory(b *xdsgrpc.Builder) {
	for _, ch := range b.ConfigHistory() {
		for _, e := range ch.Entries {
			fmt.Printf("%s config %d:", ch.Target, e.Seq)
			for _, c := range e.Changes {
				fmt.Printf(" %s %s %s;", c.Kind, c.Name, c.Op)
			}
			fmt.Println()
		}
	}
}

// paymentsResources are the resources of listener "payments": a route for
// the canary lane and one for the rest, over the backends of main and
// canary.
func paymentsResources(main, canary string, withCanary bool) []proto.Message {
	rest := rpctest.Route(rpctest.PrefixMatch("/"), rpctest.ToCluster("main"))
	rc := rpctest.RouteConfig("payments-route", rest)
	res := []proto.Message{controlplane.Listener("payments", "payments-route"), rc,
		controlplane.Cluster("main", ""), controlplane.Endpoints("main", main)}
	if withCanary {
		lane := rpctest.Route(rpctest.WithHeader(rpctest.PrefixMatch("/"), "x-lane", "canary"), rpctest.ToCluster("canary"))
		res[1] = rpctest.RouteConfig("payments-route", lane, rest)
		res = append(res, controlplane.Cluster("canary", ""), controlplane.Endpoints("canary", canary))
	}
	return res
}

// A channel's explanation of an RPC it has not sent, and its config
// history: the control plane adds a route for the canary lane.
func ExampleBuilder_Explain() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var addrs []string
	for range 2 {
		backend, err := backends.Start()
		if err != nil {
			fmt.Println(err)
			return
		}
		defer backend.Stop()
		addrs = append(addrs, backend.Addr())
	}
	cp, err := controlplane.Start(ctx, "127.0.0.1:0")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cp.Stop()
	cp.SetResources(ctx, "example-node", "1", paymentsResources(addrs[0], addrs[1], false)...)
	cfg, err := bootstrap.Parse([]byte(`{
		"xds_servers": [{"server_uri": "` + cp.Addr() + `", "channel_creds": [{"type": "insecure"}]}],
		"node": {"id": "example-node"}
	}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	configs := make(chan struct{}, 2)
	b := xdsgrpc.NewBuilder(xdsclient.NewPool(cfg, xdsclient.WithLogger(slog.New(slog.DiscardHandler))),
		xdsgrpc.WithHooks(&xdsgrpc.Hooks{ConfigChanged: func(xdsgrpc.ConfigInfo) { configs <- struct{}{} }}))
	conn, err := grpc.NewClient("xdslens:///payments", append(b.DialOptions(), grpc.WithTransportCredentials(insecure.NewCredentials()))...)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer conn.Close()
	if _, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{}); err != nil {
		fmt.Println(err)
		return
	}
	for _, version := range []string{"1", "2"} {
		if version == "2" {
			cp.SetResources(ctx, "example-node", version, paymentsResources(addrs[0], addrs[1], true)...)
		}
		select {
		case <-configs:
		case <-ctx.Done():
			fmt.Println("no config", version)
			return
		}
		fmt.Println(whyCanary(b, conn))
	}
	printHistory(b)
	// Output:
	// route #0 (prefix "/") is the first that matches /payments.Payments/Charge; it sends it to cluster "main" (eds round_robin)
	// route #0 (prefix "/", header "x-lane" exact "canary") is the first that matches /payments.Payments/Charge; it sends it to cluster "canary" (eds round_robin)
	// xdslens:///payments config 1: listener payments added; route_config payments-route added; virtual_host payments-route-vh added; route #0 added; cluster main added;
	// xdslens:///payments config 2: route #0 added; cluster canary added;
}
