// Command watchcluster watches one cluster with an xDS client and prints
// every change and error the client reports for it, until SIGINT or
// SIGTERM. It is the README's first example of the API, kept compiling
// and tested.
//
// Usage:
//
//	GRPC_XDS_BOOTSTRAP=bootstrap.json watchcluster CLUSTER
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/xdslens/xdslens/xdsclient"
	"github.com/xdslens/xdslens/xdsclient/bootstrap"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: watchcluster CLUSTER (the bootstrap in GRPC_XDS_BOOTSTRAP or GRPC_XDS_BOOTSTRAP_CONFIG)")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := watch(ctx, os.Args[1], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "watchcluster:", err)
		os.Exit(1)
	}
}

// watch prints what the client says about cluster name on out until ctx
// is done, with the bootstrap named by GRPC_XDS_BOOTSTRAP or given in
// GRPC_XDS_BOOTSTRAP_CONFIG.
func watch(ctx context.Context, name string, out io.Writer) error {
	cfg, err := bootstrap.FromEnv()
	if err != nil {
		return err
	}
	client, err := xdsclient.New(cfg, xdsclient.WithTarget("xds:///payments"))
	if err != nil {
		return err
	}
	defer client.Close()
	cancel := xdsclient.WatchCluster(client, name, watcher{out})
	defer cancel()
	<-ctx.Done()
	return nil
}

// watcher is told of every change of one cluster.
type watcher struct{ out io.Writer }

// ResourceChanged gives a new valid cluster, or an error that means the
// cluster must not be used any more.
func (w watcher) ResourceChanged(c *xdsresource.Cluster, err error) {
	if err != nil {
		fmt.Fprintln(w.out, "stop using the cluster:", err)
		return
	}
	fmt.Fprintln(w.out, "use", c.Summary())
}

// AmbientError gives an error that leaves the last cluster in use.
func (w watcher) AmbientError(err error) {
	if err == nil {
		fmt.Fprintln(w.out, "the last error is over")
		return
	}
	fmt.Fprintln(w.out, "keep using the cluster:", err)
}
