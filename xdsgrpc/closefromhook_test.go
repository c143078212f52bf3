package xdsgrpc_test

import (
	"sync"
	"testing"

	"google.golang.org/grpc"

	"github.com/xdslens/xdslens/internal/testing/rpctest"
	"github.com/xdslens/xdslens/internal/testing/xdstest"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/controlplane"
	"github.com/xdslens/xdslens/xdsgrpc"
)

// A hook may close its channel, whichever hook it is: those of the
// channel's life, configs and connections run on a goroutine of the
// channel's own, not inside gRPC's resolver or balancer, which Close
// waits for; those of picks run on the RPC's goroutine. Close returns,
// and ChannelClosed still comes, after it.
func TestCloseFromHooks(t *testing.T) {
	for _, which := range []string{"ChannelStarted", "ConfigChanged", "ConnectionChanged", "Picked", "CallFinished"} {
		t.Run(which, func(t *testing.T) {
			var mu sync.Mutex
			var conn *grpc.ClientConn
			ready := make(chan struct{})
			closed := make(chan error, 1)
			channelClosed := make(chan struct{})
			var once, closedOnce sync.Once
			closeFromHook := func() {
				<-ready
				once.Do(func() {
					mu.Lock()
					c := conn
					mu.Unlock()
					closed <- c.Close()
				})
			}
			h := &xdsgrpc.Hooks{ChannelClosed: func(xdsgrpc.ChannelInfo) { closedOnce.Do(func() { close(channelClosed) }) }}
			switch which {
			case "ChannelStarted":
				h.ChannelStarted = func(xdsgrpc.ChannelInfo) { closeFromHook() }
			case "ConfigChanged":
				h.ConfigChanged = func(xdsgrpc.ConfigInfo) { closeFromHook() }
			case "ConnectionChanged":
				h.ConnectionChanged = func(xdsgrpc.ConnectionInfo) { closeFromHook() }
			case "Picked":
				h.Picked = func(xdsgrpc.PickInfo) { closeFromHook() }
			case "CallFinished":
				h.CallFinished = func(xdsgrpc.CallEndInfo) { closeFromHook() }
			}
			e := rpctest.NewEnv(t, 1, xdsgrpc.WithHooks(h))
			e.Set(controlplane.Listener("L", "R"), rpctest.RouteConfig("R", rpctest.Route(rpctest.PrefixMatch(""), rpctest.ToCluster("c"))),
				controlplane.Cluster("c", ""), controlplane.Endpoints("c", e.Addr(0)))
			c := e.Dial("xdslens:///L")
			mu.Lock()
			conn = c
			mu.Unlock()
			close(ready)
			ctx := xdstest.Context(t)
			go rpctest.Call(ctx, c, "/pkg.S/M")
			select {
			case err := <-closed:
				if err != nil {
					t.Errorf("Close from %s = %v", which, err)
				}
			case <-ctx.Done():
				t.Fatalf("Close from %s never returned", which)
			}
			select {
			case <-channelClosed:
			case <-ctx.Done():
				t.Fatalf("no ChannelClosed after Close from %s", which)
			}
		})
	}
}
