package clusterlb_test

import (
	"context"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/status"

	"github.com/xdslens/xdslens/internal/testing/xdstest"
	"github.com/xdslens/xdslens/xdsclient/xdsconfig"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
	"github.com/xdslens/xdslens/xdsgrpc/internal/clusterlb"
)

// failure makes RPCs that do not wait for a connection until one fails
// with something other than DeadlineExceeded (RPCs wait while the cluster
// connects), and returns its status.
func failure(t *testing.T, ctx context.Context, ch *channel) (codes.Code, string) {
	t.Helper()
	for {
		short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		_, err := ch.call(short)
		cancel()
		if err == nil {
			t.Fatal("RPC succeeded, want it to fail")
		}
		if c, msg := code(err); c != codes.DeadlineExceeded || ctx.Err() != nil {
			return c, msg
		}
	}
}

// noEndpoints records the NoEndpoint hook.
type noEndpoints struct {
	mu    sync.Mutex
	infos []clusterlb.NoEndpointInfo
}

func (r *noEndpoints) hooks() *clusterlb.Hooks {
	return &clusterlb.Hooks{NoEndpoint: func(i clusterlb.NoEndpointInfo) {
		r.mu.Lock()
		r.infos = append(r.infos, i)
		r.mu.Unlock()
	}}
}

func (r *noEndpoints) last() clusterlb.NoEndpointInfo {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.infos) == 0 {
		return clusterlb.NoEndpointInfo{}
	}
	return r.infos[len(r.infos)-1]
}

// When no endpoint of the cluster can take an RPC, it fails UNAVAILABLE
// (never INVALID_ARGUMENT or NOT_FOUND: gRFC A54) with a message that
// names the cluster, says why, and carries the resolution note (gRFC
// A88); the NoEndpoint hook reports it.
func TestStatuses(t *testing.T) {
	note := "xDS server unreachable; node ID: test-node"
	withNote := func(c *xdsconfig.ClusterConfig) *xdsconfig.ClusterConfig {
		c.ResolutionNote = note
		return c
	}
	failed := withNote(edsCluster("c0"))
	failed.Cluster, failed.Endpoints = nil, nil
	failed.Err = status.Error(codes.Unavailable, `cds "c0": does not exist (node ID: test-node)`)

	tests := []struct {
		name   string
		leaves func(t *testing.T) []*xdsconfig.ClusterConfig
		leaf   string
		want   []string
	}{{
		name: "all endpoints failing",
		leaves: func(t *testing.T) []*xdsconfig.ClusterConfig {
			return []*xdsconfig.ClusterConfig{withNote(edsCluster("c1", localityAt("z", 0, 1, xdstest.ClosedAddr(t), xdstest.ClosedAddr(t))))}
		},
		leaf: "c1",
		want: []string{`cluster "c1": all endpoints failing: last error: `, "connection refused", "; " + note},
	}, {
		name: "endpoints not available",
		leaves: func(*testing.T) []*xdsconfig.ClusterConfig {
			c := withNote(edsCluster("c1"))
			c.Endpoints = nil
			return []*xdsconfig.ClusterConfig{c}
		},
		leaf: "c1",
		want: []string{`cluster "c1": endpoints not available; ` + note},
	}, {
		name: "no endpoints",
		leaves: func(*testing.T) []*xdsconfig.ClusterConfig {
			return []*xdsconfig.ClusterConfig{withNote(edsCluster("c1"))}
		},
		leaf: "c1",
		want: []string{`cluster "c1": no endpoints; ` + note},
	}, {
		name: "no usable endpoints",
		leaves: func(t *testing.T) []*xdsconfig.ClusterConfig {
			c := withNote(edsCluster("c1", localityAt("z", 0, 1, xdstest.ClosedAddr(t), xdstest.ClosedAddr(t))))
			c.Endpoints.Localities[0].Endpoints[0].Health = xdsresource.HealthUnhealthy
			c.Endpoints.Localities[0].Endpoints[1].Health = xdsresource.HealthDraining
			return []*xdsconfig.ClusterConfig{c}
		},
		leaf: "c1",
		want: []string{`cluster "c1": priority 0: none of its 2 endpoints is HEALTHY or UNKNOWN; ` + note},
	}, {
		name: "aggregate, every leaf failing",
		leaves: func(t *testing.T) []*xdsconfig.ClusterConfig {
			c2 := withNote(edsCluster("c2", localityAt("z", 0, 1, xdstest.ClosedAddr(t))))
			return []*xdsconfig.ClusterConfig{failed, c2}
		},
		leaf: "c2",
		want: []string{`cluster "c2" (of aggregate cluster "agg"): all endpoints failing: last error: `, "; " + note},
	}, {
		name: "aggregate, failed cluster last",
		leaves: func(t *testing.T) []*xdsconfig.ClusterConfig {
			c2 := withNote(edsCluster("c2"))
			c2.Endpoints = nil
			return []*xdsconfig.ClusterConfig{c2, failed}
		},
		leaf: "c0",
		want: []string{`cluster "c0" (of aggregate cluster "agg"): cds "c0": does not exist (node ID: test-node); ` + note},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := xdstest.Context(t)
			leaves := tc.leaves(t)
			name := leaves[0].Name
			if len(leaves) > 1 {
				name = "agg"
			}
			rec := &noEndpoints{}
			cfg := config(name, leaves...)
			cfg.Hooks = rec.hooks()
			ch := dial(t, cfg)
			c, msg := failure(t, ctx, ch)
			if c != codes.Unavailable {
				t.Errorf("code %v, want UNAVAILABLE (message %q)", c, msg)
			}
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("message %q does not contain %q", msg, w)
				}
			}
			if got := rec.last(); got.Cluster != name || got.Leaf != tc.leaf || got.Err == nil || got.Err.Error() != msg {
				t.Errorf("NoEndpoint hook got %+v, want cluster %q, leaf %q and the RPC's error", got, name, tc.leaf)
			}
		})
	}
}

// An invalid Config is refused, and picks fail with why while there is no
// earlier Config.
func TestInvalidConfig(t *testing.T) {
	ctx := xdstest.Context(t)
	ch := dial(t, &clusterlb.Config{Name: "c1"})
	c, msg := failure(t, ctx, ch)
	if c != codes.Unavailable || !strings.Contains(msg, `cluster "c1": no leaf clusters`) {
		t.Errorf("RPC failed with %v %q, want UNAVAILABLE naming the cluster and the problem", c, msg)
	}
}

// TestConnectingPickerQueues checks the picker a priority publishes when it
// starts, before its endpoint policy has made one: it makes the RPC wait
// (balancer.ErrNoSubConnAvailable), as gRPC's pickers do while connecting,
// and reports no pick without an endpoint. A pick that returns no
// connection and no error would make gRPC log an error and the routing
// policy route the RPC again.
func TestConnectingPickerQueues(t *testing.T) {
	ctx := xdstest.Context(t)
	// A listener that accepts nothing keeps the endpoint connecting.
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer lis.Close()
	var noEndpoint atomic.Int32
	cfg := config("c1", edsCluster("c1", locality("z", 0, 1, &backend{name: "silent", addr: lis.Addr().String()})))
	cfg.Hooks = &clusterlb.Hooks{NoEndpoint: func(clusterlb.NoEndpointInfo) { noEndpoint.Add(1) }}
	sink := &pickerSink{}
	ch := dialWith(t, cfg, sink)
	ch.cc.Connect()
	xdstest.WaitFor(t, ctx, "a first picker", func() bool { return sink.last().Picker != nil })
	sink.mu.Lock()
	first := sink.states[0]
	sink.mu.Unlock()
	if first.ConnectivityState != connectivity.Connecting {
		t.Fatalf("first state %v, want CONNECTING", first.ConnectivityState)
	}
	res, err := first.Picker.Pick(balancer.PickInfo{Ctx: ctx})
	if err != balancer.ErrNoSubConnAvailable {
		t.Errorf("Pick of the first picker = (%v, %v), want ErrNoSubConnAvailable", res.SubConn, err)
	}
	if n := noEndpoint.Load(); n != 0 {
		t.Errorf("NoEndpoint hook called %d times by a connecting picker, want 0", n)
	}
}
