package xdsgrpc_test

// Every row of gRFC A88's "Summary of Behavior Changes" as a data-plane RPC
// sees it, end to end: a scripted ADS server, the xdslens resolver and
// policies in a real gRPC channel, and real backends. For each row: the
// RPC's code (UNAVAILABLE whatever code the xDS client's watchers got,
// gRFC A54) and message (the resource, the cause, the node ID), and whether
// RPCs keep succeeding on the cached config, with the ambient error in the
// resolution note that an RPC failing in the cluster carries.

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdslens/xdslens/internal/testing/rpctest"
	"github.com/xdslens/xdslens/internal/testing/xdstest"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/backends"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/controlplane"
	"github.com/xdslens/xdslens/xdsclient"
	"github.com/xdslens/xdslens/xdsclient/xdsconfig"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
	"github.com/xdslens/xdslens/xdsgrpc"
)

var (
	ldsURL = xdsresource.ListenerType.TypeURL()
	rdsURL = xdsresource.RouteConfigType.TypeURL()
	cdsURL = xdsresource.ClusterType.TypeURL()
	edsURL = xdsresource.EndpointsType.TypeURL()
)

// a88 is a channel to xdslens:///L whose xDS client talks to a scripted
// server, with two backends.
type a88 struct {
	*xdstest.Holder
	t        *testing.T
	backends []*backends.Backend
	conn     *grpc.ClientConn

	mu      sync.Mutex
	configs []*xdsconfig.Config // every config the channel took, in order
	errs    []error             // every error that failed the whole config
}

func newA88(t *testing.T, features []string, opts ...xdsclient.Option) *a88 {
	e := &a88{t: t, Holder: xdstest.NewHolder(xdstest.Script{T: t, Ctx: xdstest.Context(t), Srv: xdstest.NewADSServer(t)})}
	return e.start(xdstest.Bootstrap{Servers: []string{e.Srv.Addr()}, Features: features, Node: `{"id": "` + rpctest.NodeID + `"}`}, opts...)
}

func (e *a88) start(bs xdstest.Bootstrap, opts ...xdsclient.Option) *a88 {
	t := e.t
	for range 2 {
		b, err := backends.Start()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(b.Stop)
		e.backends = append(e.backends, b)
	}
	pool := xdsclient.NewPool(bs.Parse(t), xdstest.ClientOptions(opts...)...)
	b := xdsgrpc.NewBuilder(pool, xdsgrpc.WithHooks(&xdsgrpc.Hooks{
		ConfigChanged: func(i xdsgrpc.ConfigInfo) {
			e.mu.Lock()
			e.configs = append(e.configs, i.Config)
			e.mu.Unlock()
			xdstest.Notify()
		},
		ConfigFailed: func(i xdsgrpc.ConfigErrorInfo) {
			e.mu.Lock()
			e.errs = append(e.errs, i.Err)
			e.mu.Unlock()
			xdstest.Notify()
		},
	}))
	env := &rpctest.Env{T: t, Builder: b}
	e.conn = env.Dial("xdslens:///L")
	e.conn.Connect()
	return e
}

// baseline serves L → R (every path to cluster A) → A → one endpoint,
// backend 0, and waits for an RPC to reach it.
func (e *a88) baseline() {
	e.t.Helper()
	e.Take()
	e.Want(ldsURL, "L")
	e.Push(ldsURL, controlplane.Listener("L", "R"))
	e.Want(rdsURL, "R")
	e.Push(rdsURL, rpctest.RouteConfig("R", rpctest.Route(rpctest.PrefixMatch("/"), rpctest.ToCluster("A"))))
	e.Want(cdsURL, "A")
	e.Push(cdsURL, controlplane.Cluster("A", ""))
	e.Want(edsURL, "A")
	e.Push(edsURL, controlplane.Endpoints("A", e.backends[0].Addr()))
	e.wantOK()
}

// rpc makes one RPC that does not wait for ready.
func (e *a88) rpc() rpctest.Outcome {
	ctx, cancel := context.WithTimeout(xdstest.Context(e.t), 5*time.Second)
	defer cancel()
	return rpctest.Call(ctx, e.conn, "/pkg.Svc/M")
}

// wantOK fails the test unless an RPC reaches backend 0.
func (e *a88) wantOK() {
	e.t.Helper()
	if o := e.rpc(); o.Err != nil || o.Backend != e.backends[0].Addr() {
		e.t.Fatalf("RPC: %+v; want it answered by backend 0 (%s)", o, e.backends[0].Addr())
	}
}

// wantUnavailable fails the test unless an RPC fails with UNAVAILABLE and a
// message that says every part.
func (e *a88) wantUnavailable(parts ...string) {
	e.t.Helper()
	o := e.rpc()
	if status.Code(o.Err) != codes.Unavailable {
		e.t.Fatalf("RPC: %+v; want it to fail with UNAVAILABLE", o)
	}
	msg := status.Convert(o.Err).Message()
	for _, p := range parts {
		if !strings.Contains(msg, p) {
			e.t.Errorf("RPC failed with %q; want it to say %q", msg, p)
		}
	}
}

// waitConfig waits until the channel takes a config for which cond holds.
func (e *a88) waitConfig(what string, cond func(*xdsconfig.Config) bool) {
	e.t.Helper()
	xdstest.WaitFor(e.t, e.Ctx, what, func() bool {
		e.mu.Lock()
		defer e.mu.Unlock()
		return len(e.configs) > 0 && cond(e.configs[len(e.configs)-1])
	})
}

// waitNote waits until the resolution note of cluster A says note.
func (e *a88) waitNote(note string) {
	e.t.Helper()
	e.waitConfig("cluster A's note to say "+note, func(c *xdsconfig.Config) bool {
		s := c.Clusters["A"]
		return s != nil && strings.Contains(s.ResolutionNote, note)
	})
}

// waitFailed waits until the whole config fails with an error that says
// what.
func (e *a88) waitFailed(what string) {
	e.t.Helper()
	xdstest.WaitFor(e.t, e.Ctx, "the config to fail with "+what, func() bool {
		e.mu.Lock()
		defer e.mu.Unlock()
		return len(e.errs) > 0 && strings.Contains(e.errs[len(e.errs)-1].Error(), what)
	})
}

// waitSlotError waits until cluster A's slot fails with an error that says
// what.
func (e *a88) waitSlotError(what string) {
	e.t.Helper()
	e.waitConfig("cluster A's slot to fail with "+what, func(c *xdsconfig.Config) bool {
		s := c.Clusters["A"]
		return s != nil && s.Err != nil && strings.Contains(s.Err.Error(), what)
	})
}

// stopBackend stops backend 0 and waits for RPCs to find no endpoint in A:
// their messages then carry A's resolution note.
func (e *a88) stopBackend() {
	e.t.Helper()
	e.backends[0].Stop()
	if !rpctest.Poll(e.Ctx, func(ctx context.Context) bool {
		return strings.Contains(status.Convert(rpctest.Call(ctx, e.conn, "/pkg.Svc/M").Err).Message(), "all endpoints failing")
	}) {
		e.t.Fatal("RPCs never failed for want of an endpoint after backend 0 stopped")
	}
}

const nodeNote = "xDS node ID:" + rpctest.NodeID

// invalidListener returns a client Listener gRPC rejects: its
// api_listener holds no HttpConnectionManager.
func invalidListener(name string) *listenerv3.Listener {
	notHCM, err := anypb.New(&clusterv3.Cluster{Name: "not an HttpConnectionManager"})
	if err != nil {
		panic(err)
	}
	return &listenerv3.Listener{Name: name, ApiListener: &listenerv3.ApiListener{ApiListener: notHCM}}
}

// Channel failure before any resource: the listener cannot be had, RPCs
// fail.
func TestA88DataPlaneServerUnreachableUncached(t *testing.T) {
	e := newA88(t, nil)
	e.Srv.Stop()
	e.waitFailed(`LDS resource "L"`)
	e.wantUnavailable(`LDS resource "L"`, "node ID", rpctest.NodeID)
}

// Channel failure with resources cached: an ambient error; RPCs keep
// succeeding, and one that finds no endpoint says the server is
// unreachable.
func TestA88DataPlaneServerUnreachableCached(t *testing.T) {
	e := newA88(t, nil)
	e.baseline()
	e.Srv.Stop()
	e.waitNote(`LDS resource "L"`)
	e.wantOK()
	e.stopBackend()
	e.wantUnavailable(`cluster "A"`, "all endpoints failing", `LDS resource "L"`, `CDS resource "A"`, `EDS resource "A"`, "node ID")
}

// NACK of a resource never received: RPCs fail UNAVAILABLE, not
// INVALID_ARGUMENT.
func TestA88DataPlaneNACKUncached(t *testing.T) {
	t.Run("listener", func(t *testing.T) {
		e := newA88(t, nil)
		e.Take()
		e.Want(ldsURL, "L")
		e.Push(ldsURL, invalidListener("L"))
		e.waitFailed(`LDS resource "L"`)
		e.wantUnavailable(`LDS resource "L"`, "NACK", rpctest.NodeID)
	})
	t.Run("cluster", func(t *testing.T) {
		e := newA88(t, nil)
		e.Take()
		e.Want(ldsURL, "L")
		e.Push(ldsURL, controlplane.Listener("L", "R"))
		e.Want(rdsURL, "R")
		e.Push(rdsURL, rpctest.RouteConfig("R", rpctest.Route(rpctest.PrefixMatch("/"), rpctest.ToCluster("A"))))
		e.Want(cdsURL, "A")
		e.Push(cdsURL, xdstest.InvalidCluster("A"))
		e.waitSlotError(`CDS resource "A"`)
		e.wantUnavailable(`CDS resource "A"`, "NACK", rpctest.NodeID)
	})
}

// NACK of a cached cluster: ambient, RPCs keep succeeding (without
// fail_on_data_errors); the cluster fails (with it).
func TestA88DataPlaneNACKCached(t *testing.T) {
	t.Run("ambient", func(t *testing.T) {
		e := newA88(t, nil)
		e.baseline()
		e.Push(cdsURL, xdstest.InvalidCluster("A"))
		e.waitNote(`CDS resource "A"`)
		e.wantOK()
		e.stopBackend()
		e.wantUnavailable("all endpoints failing", `CDS resource "A"`, "NACK", "node ID")
	})
	t.Run("fail_on_data_errors", func(t *testing.T) {
		e := newA88(t, []string{"fail_on_data_errors"})
		e.baseline()
		e.Push(cdsURL, xdstest.InvalidCluster("A"))
		e.waitSlotError(`CDS resource "A"`)
		e.wantUnavailable(`CDS resource "A"`, "NACK", rpctest.NodeID)
	})
}

// The resource timer fires for a resource never received: RPCs fail
// UNAVAILABLE (the watchers got NOT_FOUND).
func TestA88DataPlaneDoesNotExist(t *testing.T) {
	e := newA88(t, nil, xdsclient.WithResourceTimeout(50*time.Millisecond))
	e.Take()
	e.Want(ldsURL, "L")
	e.waitFailed(`LDS resource "L"`)
	e.wantUnavailable(`LDS resource "L"`, "does not exist", rpctest.NodeID)
}

// Deletion of a cached Listener or Cluster: ambient (RPCs keep succeeding)
// unless fail_on_data_errors, which fails them.
func TestA88DataPlaneDeletion(t *testing.T) {
	t.Run("cluster ambient", func(t *testing.T) {
		e := newA88(t, nil)
		e.baseline()
		e.Remove(cdsURL, "A")
		e.waitNote(`CDS resource "A"`)
		e.wantOK()
		e.stopBackend()
		e.wantUnavailable("all endpoints failing", `CDS resource "A"`, "node ID")
	})
	t.Run("listener ambient", func(t *testing.T) {
		e := newA88(t, nil)
		e.baseline()
		e.Remove(ldsURL, "L")
		e.waitNote(`LDS resource "L"`)
		e.wantOK()
	})
	t.Run("cluster fail_on_data_errors", func(t *testing.T) {
		e := newA88(t, []string{"fail_on_data_errors"})
		e.baseline()
		e.Remove(cdsURL, "A")
		e.waitSlotError(`CDS resource "A"`)
		e.wantUnavailable(`CDS resource "A"`, rpctest.NodeID)
	})
	t.Run("listener fail_on_data_errors", func(t *testing.T) {
		e := newA88(t, []string{"fail_on_data_errors"})
		e.baseline()
		e.Remove(ldsURL, "L")
		e.waitFailed(`LDS resource "L"`)
		e.wantUnavailable(`LDS resource "L"`, rpctest.NodeID)
	})
}

// TP3 resource errors: NOT_FOUND and PERMISSION_DENIED fail a resource
// never received, are ambient for a cached one unless fail_on_data_errors;
// other codes are ambient for a cached one in any case.
func TestA88DataPlaneTP3(t *testing.T) {
	t.Run("uncached", func(t *testing.T) {
		e := newA88(t, nil)
		e.Take()
		e.Want(ldsURL, "L")
		e.PushErrors(ldsURL, xdstest.ResourceError("L", codes.PermissionDenied, "not for you"))
		e.waitFailed(`LDS resource "L"`)
		e.wantUnavailable(`LDS resource "L"`, "not for you", rpctest.NodeID)
	})
	t.Run("cached ambient", func(t *testing.T) {
		e := newA88(t, nil)
		e.baseline()
		e.PushErrors(cdsURL, xdstest.ResourceError("A", codes.NotFound, "gone for now"))
		e.waitNote("gone for now")
		e.wantOK()
	})
	t.Run("cached fail_on_data_errors", func(t *testing.T) {
		e := newA88(t, []string{"fail_on_data_errors"})
		e.baseline()
		e.PushErrors(cdsURL, xdstest.ResourceError("A", codes.NotFound, "gone for now"))
		e.waitSlotError("gone for now")
		e.wantUnavailable(`CDS resource "A"`, "gone for now", rpctest.NodeID)
	})
	t.Run("other code cached fail_on_data_errors", func(t *testing.T) {
		e := newA88(t, []string{"fail_on_data_errors"})
		e.baseline()
		e.PushErrors(cdsURL, xdstest.ResourceError("A", codes.Unavailable, "busy"))
		e.waitNote("busy")
		e.wantOK()
	})
}

// The resource again after an ambient error: the note goes back to the
// node ID; a changed resource is a new config that RPCs follow.
func TestA88DataPlaneRecovery(t *testing.T) {
	e := newA88(t, nil)
	e.baseline()
	e.Push(cdsURL, xdstest.InvalidCluster("A"))
	e.waitNote("NACK")
	e.Push(cdsURL, controlplane.Cluster("A", ""))
	e.waitNote(nodeNote)
	e.Push(edsURL, controlplane.Endpoints("A", e.backends[1].Addr()))
	if !rpctest.Poll(e.Ctx, func(ctx context.Context) bool {
		return rpctest.Call(ctx, e.conn, "/pkg.Svc/M").Backend == e.backends[1].Addr()
	}) {
		t.Fatal("RPCs never reached backend 1 after the endpoints changed")
	}
	e.backends[1].Stop()
	if !rpctest.Poll(e.Ctx, func(ctx context.Context) bool {
		m := status.Convert(rpctest.Call(ctx, e.conn, "/pkg.Svc/M").Err).Message()
		return strings.Contains(m, "all endpoints failing") && strings.HasSuffix(m, nodeNote)
	}) {
		t.Errorf("RPCs failing for want of an endpoint never said only the node ID: %v", e.rpc().Err)
	}
}

// A server failure while a resource was never received, with a fallback
// server: RPCs go on through the fallback server (gRFC A71).
func TestA88DataPlaneFallback(t *testing.T) {
	primary := xdstest.NewADSServer(t)
	secondary, err := controlplane.Start(xdstest.Context(t), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(secondary.Stop)
	e := &a88{t: t, Holder: xdstest.NewHolder(xdstest.Script{T: t, Ctx: xdstest.Context(t), Srv: primary})}
	e.start(xdstest.Bootstrap{Servers: []string{primary.Addr(), secondary.Addr()}, Node: `{"id": "` + rpctest.NodeID + `"}`})
	var all []proto.Message
	all = append(all, controlplane.Listener("L", "R"), rpctest.RouteConfig("R", rpctest.Route(rpctest.PrefixMatch("/"), rpctest.ToCluster("A"))),
		controlplane.Cluster("A", ""), controlplane.Endpoints("A", e.backends[0].Addr()))
	if err := secondary.SetResources(e.Ctx, rpctest.NodeID, "1", all...); err != nil {
		t.Fatal(err)
	}
	// The primary answers everything but the endpoints, then goes away.
	e.Take()
	e.Want(ldsURL, "L")
	e.Push(ldsURL, controlplane.Listener("L", "R"))
	e.Want(rdsURL, "R")
	e.Push(rdsURL, rpctest.RouteConfig("R", rpctest.Route(rpctest.PrefixMatch("/"), rpctest.ToCluster("A"))))
	e.Want(cdsURL, "A")
	e.Push(cdsURL, controlplane.Cluster("A", ""))
	e.Want(edsURL, "A")
	primary.Stop()
	if !rpctest.Poll(e.Ctx, func(ctx context.Context) bool { return rpctest.Call(ctx, e.conn, "/pkg.Svc/M").Err == nil }) {
		t.Fatalf("RPCs never succeeded through the fallback server: %+v", e.rpc())
	}
	e.wantOK()
}
