package xdsconfig_test

// gRFC A74's rule against config tears: a config is delivered only when
// everything it needs has been heard from, and what the config in use
// needs stays watched until a config without it is delivered. The recorder
// checks every delivered config for a route to a cluster without a slot.

import (
	"slices"
	"testing"

	"github.com/xdslens/xdslens/internal/xdswatch/demo/controlplane"
	"github.com/xdslens/xdslens/xdsclient/xdsconfig"
)

// The route of the baseline moves from A (and B) to C, which
// the server knows nothing of yet, and checks that the config in use
// (with A) is kept, and A watched, until C's endpoints arrive.
func TestTearRouteSwitch(t *testing.T) {
	for _, tc := range []struct{ name string }{{"cluster"}, {"weighted clusters"}} {
		t.Run(tc.name, func(t *testing.T) {
			f := newScripted(t, nil)
			_, r, base := f.baseline()
			newRoute := toCluster("/", "C")
			if tc.name == "weighted clusters" {
				newRoute = toWeighted("/", "B", 1, "C", 1)
			}
			f.Push(rdsURL, routes("R", vhost("vh", []string{"*"}, newRoute)))
			f.Want(cdsURL, "A", "B", "C")
			f.Push(cdsURL, controlplane.Cluster("C", ""))
			f.Want(edsURL, "A", "B", "C")
			// Everything the config in use needs is still watched.
			for _, url := range []string{cdsURL, edsURL} {
				if !watched(f.c, url, "A") {
					t.Errorf("%s A dropped before a config without it was delivered", url)
				}
			}
			// A's endpoints change while C's are slow: no config can be
			// made (the route needs C), so the one in use stays.
			f.Push(edsURL, controlplane.Endpoints("A", "127.0.0.1:11"))
			f.Push(edsURL, controlplane.Endpoints("C", "127.0.0.1:3"))
			c := r.config()
			if c.Clusters["A"] != nil || !slices.Equal(addrs(c.Clusters["C"]), []string{"127.0.0.1:3"}) {
				t.Errorf("first config after the switch: %s; want C with its endpoints and no A", describe(c))
			}
			if ch := xdsconfig.Diff(base, c); !ch.RouteConfig || !ch.VirtualHost || !slices.Contains(ch.Removed, "A") || !slices.Equal(ch.Added, []string{"C"}) {
				t.Errorf("Diff = %s", ch)
			}
			// Once it is delivered, A is unwatched.
			if tc.name == "cluster" {
				f.Want(cdsURL, "C")
				f.Want(edsURL, "C")
			} else {
				f.Want(cdsURL, "B", "C")
				f.Want(edsURL, "B", "C")
			}
			r.none()
		})
	}
}

// A listener that moves to another route configuration delivers nothing
// until that one and its clusters are whole.
func TestTearRouteConfigNameChange(t *testing.T) {
	f := newScripted(t, nil)
	_, r, _ := f.baseline()
	f.Push(ldsURL, controlplane.Listener("L", "R2"))
	f.Want(rdsURL, "R2")
	// The old route configuration changes meanwhile: it is no longer the
	// listener's, nothing is delivered.
	f.Push(rdsURL, routes("R", vhost("vh", []string{"*"}, toCluster("/", "A"))))
	f.Push(edsURL, controlplane.Endpoints("B", "127.0.0.1:22"))
	f.Push(rdsURL, routes("R2", vhost("vh2", []string{"*"}, toCluster("/", "B"))))
	c := r.config()
	if c.RouteConfigName != "R2" || c.VirtualHost.Name != "vh2" || len(c.Clusters) != 1 ||
		!slices.Equal(addrs(c.Clusters["B"]), []string{"127.0.0.1:22"}) {
		t.Errorf("config after the change: %s", describe(c))
	}
	f.Want(cdsURL, "B")
	r.none()
}
