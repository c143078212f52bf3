package demo

import (
	"context"
	"fmt"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/xdslens/xdslens/telemetry/dataplane"
	"github.com/xdslens/xdslens/xdsclient"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
	"github.com/xdslens/xdslens/xdsserver"
)

// servingGoal is a goal of cache c, RPCs through Target succeeding,
// and the demo's xDS-enabled server in mode m.
func servingGoal(c Cache, m xdsserver.Mode) Goal {
	return Goal{Cache: c, Serving: &m, RPC: RPCGoal{Code: codes.OK}}
}

// servingText describes g's serving mode for the tour's lines, "" when
// g says nothing of it.
func (t *tour) servingText(g Goal) string {
	if g.Serving == nil {
		return ""
	}
	return fmt.Sprintf("; the xDS-enabled server on %s is %s", t.serverAddr, *g.Serving)
}

// serverSteps are the tour's steps on the demo's xDS-enabled server, after
// the switch back to the primary (version 8): RBAC allowing and denying
// RPCs under mTLS, then a Listener the server cannot serve, then its
// return.
func (t *tour) serverSteps(serve func(string, func([]proto.Message) []proto.Message) func(context.Context) error) []Step {
	cds := xdsresource.ClusterType
	at := func(version string) Cache {
		return allAt(t.specs, version, Primary).with(cds, TimeoutCluster, empty(xdsclient.StateTimeout))
	}
	return []Step{{
		Title: "RBAC",
		what: fmt.Sprintf("xdswatch calls the demo's xDS-enabled server on %s under mTLS, as %s: %s is allowed (RBAC policy demo-empty-call), "+
			"%s matches no policy, so RBAC denies it with PERMISSION_DENIED and the stdout audit logger writes the denial (on standard error)",
			t.serverAddr, ClientID, AllowedMethod, DeniedMethod),
		act:   t.callServer,
		Goals: []Goal{servingGoal(at("8"), xdsserver.ModeServing)},
	}, {
		Title: "not serving",
		what: fmt.Sprintf("version 9 gives the server's Listener another port than %s: the address stops serving (NOT_SERVING, gRFC A36), "+
			"closes every new connection as it comes and drains the open ones; every resource is ACKED at version 9; RPCs through %s succeed", t.serverAddr, Target),
		act:   serve("9", func(base []proto.Message) []proto.Message { return withServerPort(tourConfig(base), 1) }),
		Goals: []Goal{servingGoal(at("9"), xdsserver.ModeNotServing)},
	}, {
		Title: "serving again",
		what:  "version 10 gives the Listener back its address: the server serves again (SERVING); every resource is ACKED at version 10",
		act:   serve("10", tourConfig),
		Goals: []Goal{servingGoal(at("10"), xdsserver.ModeServing)},
	}}
}

// callServer makes the RBAC step's two RPCs to the demo's xDS-enabled
// server with the demo client's certificate, prints what each saw, and
// fails when one is not what the step announced.
func (t *tour) callServer(ctx context.Context) error {
	conn, err := grpc.NewClient("passthrough:///"+t.serverAddr, grpc.WithTransportCredentials(credentials.NewTLS(t.demo.certs.clientTLS)))
	if err != nil {
		return err
	}
	defer conn.Close()
	for _, c := range []struct {
		method string
		want   codes.Code
	}{{AllowedMethod, codes.OK}, {DeniedMethod, codes.PermissionDenied}} {
		callCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := conn.Invoke(callCtx, c.method, &emptypb.Empty{}, &emptypb.Empty{})
		cancel()
		st := status.Convert(err)
		t.sayf("tour: %s on %s as %s: %s %s", c.method, t.serverAddr, ClientID, dataplane.StatusName(st.Code()), st.Message())
		if st.Code() != c.want {
			return fmt.Errorf("%s: %s, announced %s", c.method, dataplane.StatusName(st.Code()), dataplane.StatusName(c.want))
		}
	}
	return nil
}

// withServerPort returns base with the port of every server Listener
// moved by delta.
func withServerPort(base []proto.Message, delta int) []proto.Message {
	out := make([]proto.Message, 0, len(base))
	for _, m := range base {
		if l, ok := m.(*listenerv3.Listener); ok && l.GetApiListener() == nil {
			l = proto.Clone(l).(*listenerv3.Listener)
			sa := l.GetAddress().GetSocketAddress()
			sa.PortSpecifier = &corev3.SocketAddress_PortValue{PortValue: sa.GetPortValue() + uint32(delta)}
			m = l
		}
		out = append(out, m)
	}
	return out
}
