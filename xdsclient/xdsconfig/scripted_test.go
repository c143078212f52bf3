package xdsconfig_test

import (
	"slices"
	"testing"

	"github.com/xdslens/xdslens/internal/testing/xdstest"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/controlplane"
	"github.com/xdslens/xdslens/xdsclient"
	"github.com/xdslens/xdslens/xdsclient/xdsconfig"
)

// scripted is a client of a scripted ADS server that holds, per type, the
// resources it serves.
type scripted struct {
	*xdstest.Holder
	c *xdsclient.Client
}

func newScripted(t *testing.T, features []string, opts ...xdsclient.Option) *scripted {
	f := &scripted{Holder: xdstest.NewHolder(xdstest.Script{T: t, Ctx: ctx(t), Srv: xdstest.NewADSServer(t)})}
	f.c = newClient(t, bootstrapFor(t, f.Srv.Addr(), features...), opts...)
	return f
}

// stream takes the client's ADS stream and its request for listener.
func (f *scripted) stream(listener string) {
	f.T.Helper()
	f.Take()
	f.Want(ldsURL, listener)
}

// baseline serves listener L → route configuration R (virtual host "*",
// routes to clusters A and B) → EDS clusters A and B, each with one
// endpoint, to a new manager, and returns it with its first config.
func (f *scripted) baseline(opts ...xdsconfig.Option) (*xdsconfig.Manager, *recorder, *xdsconfig.Config) {
	f.T.Helper()
	m, r := start(f.T, f.c, "L", "svc", opts...)
	f.stream("L")
	f.Push(ldsURL, controlplane.Listener("L", "R"))
	f.Want(rdsURL, "R")
	f.Push(rdsURL, routes("R", vhost("vh", []string{"*"}, toCluster("/a", "A"), toCluster("/", "B"))))
	f.Want(cdsURL, "A", "B")
	f.Push(cdsURL, controlplane.Cluster("A", ""), controlplane.Cluster("B", ""))
	f.Want(edsURL, "A", "B")
	f.Push(edsURL, controlplane.Endpoints("A", "127.0.0.1:1"), controlplane.Endpoints("B", "127.0.0.1:2"))
	c := r.config()
	if !slices.Equal(addrs(c.Clusters["A"]), []string{"127.0.0.1:1"}) || !slices.Equal(addrs(c.Clusters["B"]), []string{"127.0.0.1:2"}) {
		f.T.Fatalf("baseline config %s", describe(c))
	}
	return m, r, c
}
