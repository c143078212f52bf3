package rpctest

import (
	"context"
	"log/slog"

	"github.com/xdslens/xdslens/internal/xdswatch/demo/backends"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/controlplane"
	"github.com/xdslens/xdslens/xdsclient"
	"github.com/xdslens/xdslens/xdsclient/bootstrap"
)

// PaymentsNodeID is the node ID of StartPayments' bootstrap.
const PaymentsNodeID = "example-node"

// StartPayments starts what the packages' examples route RPCs through: a
// backend, and a control plane that serves the listener "payments",
// routed to the cluster "payments-backend" whose one endpoint is that
// backend; it returns a pool of xDS clients of that control plane (their
// logs discarded) and a func that stops both servers.
func StartPayments(ctx context.Context) (*xdsclient.Pool, func(), error) {
	backend, err := backends.Start()
	if err != nil {
		return nil, nil, err
	}
	cp, err := controlplane.Start(ctx, "127.0.0.1:0")
	if err != nil {
		backend.Stop()
		return nil, nil, err
	}
	stop := func() {
		cp.Stop()
		backend.Stop()
	}
	err = cp.SetResources(ctx, PaymentsNodeID, "1",
		controlplane.Listener("payments", "payments-route"),
		controlplane.RouteConfig("payments-route", []string{"*"}, "payments-backend"),
		controlplane.Cluster("payments-backend", ""),
		controlplane.Endpoints("payments-backend", backend.Addr()))
	if err != nil {
		stop()
		return nil, nil, err
	}
	cfg, err := bootstrap.Parse([]byte(`{
		"xds_servers": [{"server_uri": "` + cp.Addr() + `", "channel_creds": [{"type": "insecure"}]}],
		"node": {"id": "` + PaymentsNodeID + `"}
	}`))
	if err != nil {
		stop()
		return nil, nil, err
	}
	return xdsclient.NewPool(cfg, xdsclient.WithLogger(slog.New(slog.DiscardHandler))), stop, nil
}
