package xdsconfig_test

// The rows of gRFC A88's "Summary of Behavior Changes" as they reach the
// config, against a scripted ADS server: a ResourceChanged error of the
// Listener or RouteConfiguration fails the config, one of a Cluster is an
// error in its slot, one of endpoints leaves the cluster without them,
// and an ambient error only adds to resolution notes.

import (
	"errors"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/xdslens/xdslens/internal/testing/xdstest"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/controlplane"
	"github.com/xdslens/xdslens/xdsclient"
	"github.com/xdslens/xdslens/xdsclient/bootstrap"
	"github.com/xdslens/xdslens/xdsclient/xdsconfig"
)

// slotErr returns the error of cluster name's slot, failing t unless it is
// a *ResourceError of a CDS resource whose cause has code cause.
func slotErr(t *testing.T, c *xdsconfig.Config, name string, cause codes.Code) *xdsconfig.ResourceError {
	t.Helper()
	s := c.Clusters[name]
	var re *xdsconfig.ResourceError
	if s == nil || !errors.As(s.Err, &re) {
		t.Fatalf("slot %q is not an error: %s", name, describe(c))
	}
	if re.Kind != "CDS" || re.Name != name || re.CauseCode() != cause || !strings.HasPrefix(re.Error(), `CDS resource "`+name+`": `) {
		t.Errorf("slot %q: %s %q cause %v: %v; want CDS, cause %v", name, re.Kind, re.Name, re.CauseCode(), re, cause)
	}
	return re
}

// checkNote fails t unless the note of cluster name has every part.
func checkNote(t *testing.T, c *xdsconfig.Config, name string, parts ...string) {
	t.Helper()
	s := c.Clusters[name]
	if s == nil || !s.IsLeaf() {
		t.Fatalf("slot %q is not a usable leaf: %s", name, describe(c))
	}
	for _, p := range parts {
		if !strings.Contains(s.ResolutionNote, p) {
			t.Errorf("note of %q is %q; want it to say %q", name, s.ResolutionNote, p)
		}
	}
}

// checkNodeNote fails t unless the clusters' notes say only the node ID.
func checkNodeNote(t *testing.T, c *xdsconfig.Config, names ...string) {
	t.Helper()
	for _, n := range names {
		if s := c.Clusters[n]; s == nil || s.ResolutionNote != "xDS node ID:"+nodeID {
			t.Errorf("slot %q: %+v, want the note %q", n, s, "xDS node ID:"+nodeID)
		}
	}
}

// configError fails t unless err is the failure of the whole config for
// resource kind/name whose cause has code cause and says want.
func configError(t *testing.T, err error, kind, name string, cause codes.Code, want string) {
	t.Helper()
	var re *xdsconfig.ResourceError
	if !errors.As(err, &re) || re.Kind != kind || re.Name != name || re.CauseCode() != cause ||
		!strings.HasPrefix(err.Error(), kind+` resource "`+name+`": `) || !strings.Contains(err.Error(), want) {
		t.Errorf("config error %v; want a %s %q error with cause %v saying %q", err, kind, name, cause, want)
	}
}

// The xDS channel fails with nothing cached: the listener's ResourceChanged
// error fails the config.
func TestA88ChannelFailureUncached(t *testing.T) {
	f := newScripted(t, nil)
	f.Srv.Stop()
	_, r := start(t, f.c, "L", "svc")
	configError(t, r.failure(), "LDS", "L", codes.Unavailable, f.Srv.Addr())
}

// ADS streams that fail before any response: resources not yet cached
// (the clusters) fail their slots; the cached listener and route
// configuration only add to notes, which error slots do not have.
func TestA88StreamFailedWithoutResponseUncached(t *testing.T) {
	f := newScripted(t, nil)
	_, r := start(t, f.c, "L", "svc")
	f.stream("L")
	f.Push(ldsURL, controlplane.Listener("L", "R"))
	f.Want(rdsURL, "R")
	f.Push(rdsURL, routes("R", vhost("vh", []string{"*"}, toCluster("/a", "A"), toCluster("/", "B"))))
	f.Want(cdsURL, "A", "B")
	f.St.End(status.Error(codes.Unavailable, "first stream ends after responses"))
	f.St = f.NextStream() // no error yet: the first stream had responses (gRFC A57)
	f.Want(cdsURL, "A", "B")
	f.St.End(status.Error(codes.Unavailable, "second stream ends with none"))
	c := r.config()
	for _, name := range []string{"A", "B"} {
		if re := slotErr(t, c, name, codes.Unavailable); !strings.Contains(re.Error(), "second stream ends with none") {
			t.Errorf("slot %q: %v, want the stream's status", name, re)
		}
	}
}

// The same with everything cached: every note says so, nothing else
// changes.
func TestA88StreamFailedWithoutResponseCached(t *testing.T) {
	f := newScripted(t, nil)
	_, r, base := f.baseline()
	f.St.End(status.Error(codes.Unavailable, "first stream ends after responses"))
	f.St = f.NextStream()
	f.Want(ldsURL, "L")
	f.St.End(status.Error(codes.Unavailable, "second stream ends with none"))
	c := r.until("notes of the failed stream", func(c *xdsconfig.Config) bool {
		return strings.Count(c.Clusters["A"].ResolutionNote, "second stream ends with none") == 4 &&
			strings.Count(c.Clusters["B"].ResolutionNote, "second stream ends with none") == 4
	})
	for _, name := range []string{"A", "B"} {
		if s := c.Clusters[name]; s.Cluster != base.Clusters[name].Cluster || s.Endpoints != base.Clusters[name].Endpoints {
			t.Errorf("cluster %q lost its resource or endpoints on an ambient error", name)
		}
	}
	if c.Listener != base.Listener || c.RouteConfig != base.RouteConfig {
		t.Error("the listener or route configuration changed on an ambient error")
	}
}

// NACK of a cached cluster, no fail_on_data_errors: ambient. The cluster
// keeps its resource and endpoints, its note says why; a later valid
// resource clears the note.
func TestA88NACKCachedCluster(t *testing.T) {
	f := newScripted(t, nil)
	_, r, base := f.baseline()
	f.Push(cdsURL, xdstest.InvalidCluster("A"))
	c := r.config()
	checkNote(t, c, "A", `CDS resource "A": `, "NACK")
	if s := c.Clusters["A"]; s.Cluster != base.Clusters["A"].Cluster || s.Endpoints != base.Clusters["A"].Endpoints {
		t.Error("cluster A lost its resource or endpoints on an ambient error")
	}
	checkNodeNote(t, c, "B")
	if ch := xdsconfig.Diff(base, c); !ch.Empty() && (ch.Listener || ch.RouteConfig || len(ch.Changed) != 1 || ch.Changed[0] != "A") {
		t.Errorf("Diff = %s, want only A changed", ch)
	}

	f.Push(cdsURL, controlplane.Cluster("A", ""))
	checkNodeNote(t, r.config(), "A", "B")
}

// NACK of a cached cluster with fail_on_data_errors: the cluster's slot
// fails, the others do not.
func TestA88NACKCachedClusterFailOnDataErrors(t *testing.T) {
	f := newScripted(t, []string{bootstrap.FeatureFailOnDataErrors})
	_, r, _ := f.baseline()
	f.Push(cdsURL, xdstest.InvalidCluster("A"))
	c := r.config()
	slotErr(t, c, "A", codes.InvalidArgument)
	checkNodeNote(t, c, "B")
	f.Want(edsURL, "B") // nothing needs A's endpoints any more

	f.Push(cdsURL, controlplane.Cluster("A", ""))
	f.Want(edsURL, "A", "B")
	f.Push(edsURL)
	c = r.config()
	if !c.Clusters["A"].IsLeaf() {
		t.Errorf("A after a valid resource: %s", describe(c))
	}
	checkNodeNote(t, c, "A", "B")
}

// NACK of a cluster never received: its slot fails and the config is
// delivered without waiting for it.
func TestA88NACKUncachedCluster(t *testing.T) {
	f := newScripted(t, nil)
	_, r := start(t, f.c, "L", "svc")
	f.stream("L")
	f.Push(ldsURL, controlplane.ListenerInlineRoute("L", controlplane.RouteConfig("inline", []string{"*"}, "A")))
	f.Want(cdsURL, "A")
	f.Push(cdsURL, xdstest.InvalidCluster("A"))
	c := r.config()
	re := slotErr(t, c, "A", codes.InvalidArgument)
	if !strings.Contains(re.Error(), nodeMark) {
		t.Errorf("slot error %q does not name the node", re)
	}
}

// Deletion of a cached cluster: ambient NOT_FOUND without
// fail_on_data_errors, the slot's error with it.
func TestA88ClusterDeletion(t *testing.T) {
	for _, tc := range []struct {
		name     string
		features []string
	}{{"ignored", nil}, {"fail_on_data_errors", []string{bootstrap.FeatureFailOnDataErrors}}} {
		t.Run(tc.name, func(t *testing.T) {
			f := newScripted(t, tc.features)
			_, r, _ := f.baseline()
			f.Remove(cdsURL, "A")
			c := r.config()
			if tc.features == nil {
				checkNote(t, c, "A", `CDS resource "A": `, "deleted by the server")
			} else {
				slotErr(t, c, "A", codes.NotFound)
			}
			checkNodeNote(t, c, "B")
		})
	}
}

// Deletion of the cached listener: ambient without fail_on_data_errors
// (every cluster's note says so), the config fails with it.
func TestA88ListenerDeletion(t *testing.T) {
	t.Run("ignored", func(t *testing.T) {
		f := newScripted(t, nil)
		_, r, _ := f.baseline()
		f.Remove(ldsURL, "L")
		c := r.config()
		checkNote(t, c, "A", `LDS resource "L": `)
		checkNote(t, c, "B", `LDS resource "L": `)

		f.Push(ldsURL, controlplane.Listener("L", "R"))
		checkNodeNote(t, r.config(), "A", "B")
	})
	t.Run("fail_on_data_errors", func(t *testing.T) {
		f := newScripted(t, []string{bootstrap.FeatureFailOnDataErrors})
		_, r, _ := f.baseline()
		f.Remove(ldsURL, "L")
		configError(t, r.failure(), "LDS", "L", codes.NotFound, nodeMark)

		// The listener comes back: the route configuration and clusters
		// were kept, so the config is whole at once.
		f.Push(ldsURL, controlplane.Listener("L", "R"))
		checkNodeNote(t, r.config(), "A", "B")
	})
}

// xRFC TP3 errors: on a cached resource, ambient unless fail_on_data_errors
// and NOT_FOUND or PERMISSION_DENIED; on one not cached, a resource error.
func TestA88TP3Errors(t *testing.T) {
	for _, tc := range []struct {
		name     string
		features []string
		code     codes.Code
		ambient  bool
	}{
		{"NOT_FOUND", nil, codes.NotFound, true},
		{"NOT_FOUND fail_on_data_errors", []string{bootstrap.FeatureFailOnDataErrors}, codes.NotFound, false},
		{"PERMISSION_DENIED fail_on_data_errors", []string{bootstrap.FeatureFailOnDataErrors}, codes.PermissionDenied, false},
		{"other fail_on_data_errors", []string{bootstrap.FeatureFailOnDataErrors}, codes.Internal, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newScripted(t, tc.features)
			_, r, _ := f.baseline()
			f.PushErrors(cdsURL, xdstest.ResourceError("A", tc.code, "tp3 says no"))
			c := r.config()
			if tc.ambient {
				checkNote(t, c, "A", `CDS resource "A": `, "tp3 says no")
			} else if re := slotErr(t, c, "A", tc.code); !strings.Contains(re.Error(), "tp3 says no") {
				t.Errorf("slot error %q does not carry the server's message", re)
			}
			checkNodeNote(t, c, "B")
		})
	}
	t.Run("uncached endpoints", func(t *testing.T) {
		f := newScripted(t, nil)
		_, r := start(t, f.c, "L", "svc")
		f.stream("L")
		f.Push(ldsURL, controlplane.ListenerInlineRoute("L", controlplane.RouteConfig("inline", []string{"*"}, "A")))
		f.Want(cdsURL, "A")
		f.Push(cdsURL, controlplane.Cluster("A", "A-eds"))
		f.Want(edsURL, "A-eds")
		f.Send(f.St, xdstest.ErrorResponse(edsURL, "e1", xdstest.ResourceError("A-eds", codes.Unavailable, "tp3 endpoints")))
		c := r.config()
		s := c.Clusters["A"]
		if !s.IsLeaf() || s.Endpoints != nil {
			t.Errorf("slot A %+v, want a usable leaf without endpoints", s)
		}
		checkNote(t, c, "A", `EDS resource "A-eds": `, "tp3 endpoints")

		// Valid endpoints end it.
		f.Push(edsURL, controlplane.Endpoints("A-eds", "127.0.0.1:1"))
		c = r.config()
		checkNodeNote(t, c, "A")
		if len(addrs(c.Clusters["A"])) != 1 {
			t.Errorf("endpoints of A: %v", addrs(c.Clusters["A"]))
		}
	})
	t.Run("uncached route configuration", func(t *testing.T) {
		f := newScripted(t, nil)
		_, r := start(t, f.c, "L", "svc")
		f.stream("L")
		f.Push(ldsURL, controlplane.Listener("L", "R"))
		f.Want(rdsURL, "R")
		f.Send(f.St, xdstest.ErrorResponse(rdsURL, "e1", xdstest.ResourceError("R", codes.PermissionDenied, "not yours")))
		configError(t, r.failure(), "RDS", "R", codes.PermissionDenied, "not yours")
	})
}

// Resources that do not exist: the listener fails the config, a cluster
// fails its slot; with resource_timer_is_transient_error the cause is
// UNAVAILABLE.
func TestA88DoesNotExist(t *testing.T) {
	timeout := xdsclient.WithResourceTimeout(50 * time.Millisecond)
	t.Run("listener", func(t *testing.T) {
		f := newScripted(t, nil, timeout)
		_, r := start(t, f.c, "L", "svc")
		f.stream("L")
		configError(t, r.failure(), "LDS", "L", codes.NotFound, "")
	})
	for _, tc := range []struct {
		name     string
		features []string
		code     codes.Code
	}{{"cluster", nil, codes.NotFound}, {"cluster transient", []string{bootstrap.FeatureResourceTimerIsTransientError}, codes.Unavailable}} {
		t.Run(tc.name, func(t *testing.T) {
			f := newScripted(t, tc.features, timeout)
			_, r := start(t, f.c, "L", "svc")
			f.stream("L")
			f.Push(ldsURL, controlplane.ListenerInlineRoute("L", routes("inline", vhost("vh", []string{"*"}, toCluster("/a", "A"), toCluster("/", "B")))))
			f.Want(cdsURL, "A", "B")
			f.Push(cdsURL, controlplane.Cluster("B", ""))
			f.Want(edsURL, "B")
			f.Push(edsURL, controlplane.Endpoints("B", "127.0.0.1:2"))
			c := r.config()
			slotErr(t, c, "A", tc.code)
			checkNodeNote(t, c, "B")
		})
	}
}

// The server goes away while everything is cached: every resource gets an
// ambient error, so every note names all four; when it is back and sends
// the same resources, the notes say only the node ID again.
func TestA88ServerUnreachableCached(t *testing.T) {
	f := newScripted(t, nil)
	_, r, _ := f.baseline()
	f.Srv.Stop()
	r.until("notes of the unreachable server on every resource", func(c *xdsconfig.Config) bool {
		for _, name := range []string{"A", "B"} {
			n := c.Clusters[name].ResolutionNote
			for _, p := range []string{`LDS resource "L"`, `RDS resource "R"`, `CDS resource "` + name + `"`, `EDS resource "` + name + `"`} {
				if !strings.Contains(n, p) {
					return false
				}
			}
		}
		return true
	})
	if err := f.Srv.Restart(); err != nil {
		t.Fatal(err)
	}
	f.stream("L")
	f.Push(ldsURL, controlplane.Listener("L", "R"))
	f.Want(rdsURL, "R")
	f.Push(rdsURL, routes("R", vhost("vh", []string{"*"}, toCluster("/a", "A"), toCluster("/", "B"))))
	f.Want(cdsURL, "A", "B")
	f.Push(cdsURL)
	f.Want(edsURL, "A", "B")
	f.Push(edsURL)
	r.until("notes cleared", func(c *xdsconfig.Config) bool {
		return c.Clusters["A"].ResolutionNote == "xDS node ID:"+nodeID && c.Clusters["B"].ResolutionNote == "xDS node ID:"+nodeID
	})
}

// The route configuration is NACKed while cached: its ambient error goes
// into every cluster's note.
func TestA88NACKCachedRouteConfig(t *testing.T) {
	f := newScripted(t, nil)
	_, r, _ := f.baseline()
	bad := routes("R", vhost("vh", nil, toCluster("/", "A"))) // no domains: invalid
	f.Push(rdsURL, bad)
	c := r.config()
	checkNote(t, c, "A", `RDS resource "R": `)
	checkNote(t, c, "B", `RDS resource "R": `)
}

// A route configuration never received that fails, then arrives.
func TestA88NACKUncachedRouteConfig(t *testing.T) {
	f := newScripted(t, nil)
	_, r := start(t, f.c, "L", "svc")
	f.stream("L")
	f.Push(ldsURL, controlplane.Listener("L", "R"))
	f.Want(rdsURL, "R")
	f.Push(rdsURL, routes("R", vhost("vh", nil, toCluster("/", "A"))))
	configError(t, r.failure(), "RDS", "R", codes.InvalidArgument, "domains")
	f.Push(rdsURL, routes("R", vhost("vh", []string{"*"}, toCluster("/", "A"))))
	f.Want(cdsURL, "A")
	f.Push(cdsURL, controlplane.Cluster("A", ""))
	f.Want(edsURL, "A")
	f.Push(edsURL, controlplane.Endpoints("A", "127.0.0.1:1"))
	if c := r.config(); !c.Clusters["A"].IsLeaf() {
		t.Errorf("config after recovery: %s", describe(c))
	}
}

func TestNotAPIListener(t *testing.T) {
	f := newScripted(t, nil)
	_, r := start(t, f.c, "L", "svc")
	f.stream("L")
	f.Push(ldsURL, controlplane.ServerListener("L", "127.0.0.1", 8080, "R"))
	configError(t, r.failure(), "LDS", "L", codes.Unavailable, "not an API listener")
}

func TestNoVirtualHostForAuthority(t *testing.T) {
	f := newScripted(t, nil)
	_, r := start(t, f.c, "L", "svc.example.com")
	f.stream("L")
	f.Push(ldsURL, controlplane.Listener("L", "R"))
	f.Want(rdsURL, "R")
	f.Push(rdsURL, routes("R", vhost("vh", []string{"other.example.com"}, toCluster("/", "A"))))
	configError(t, r.failure(), "RDS", "R", codes.Unavailable, `could not find VirtualHost for "svc.example.com"`)

	// An inline route configuration fails as the listener.
	f.Push(ldsURL, controlplane.ListenerInlineRoute("L", controlplane.RouteConfig("inline", []string{"x"}, "A")))
	configError(t, r.failure(), "LDS", "L", codes.Unavailable, "could not find VirtualHost")
}

func TestEndpointsWithoutLocalities(t *testing.T) {
	f := newScripted(t, nil)
	_, r, _ := f.baseline()
	f.Push(edsURL, noEndpoints("A"))
	c := r.config()
	checkNote(t, c, "A", `EDS resource "A": contains no localities`, nodeMark)
	if s := c.Clusters["A"]; s.Endpoints == nil || len(s.Endpoints.Localities) != 0 {
		t.Errorf("endpoints of A: %+v, want the resource, empty", s.Endpoints)
	}
}

// A server can make a client's error as long as it likes: what reaches a
// note or a slot stays bounded (the recorder checks every message).
func TestHostileMessagesBounded(t *testing.T) {
	f := newScripted(t, []string{bootstrap.FeatureFailOnDataErrors})
	_, r, _ := f.baseline()
	huge := strings.Repeat("x", 1<<20)
	f.PushErrors(cdsURL, xdstest.ResourceError("A", codes.Internal, huge))
	c := r.config()
	checkNote(t, c, "A", `CDS resource "A": `, nodeMark)
	// This response also sends A again, which clears its error: the
	// manager may deliver that before B's error.
	f.PushErrors(cdsURL, xdstest.ResourceError("B", codes.NotFound, huge))
	c = r.until("B failed", func(c *xdsconfig.Config) bool { return c.Clusters["B"] != nil && c.Clusters["B"].Err != nil })
	if re := slotErr(t, c, "B", codes.NotFound); len(re.Error()) > xdsconfig.MaxMessageLen {
		t.Errorf("slot error of %d bytes", len(re.Error()))
	}
}
