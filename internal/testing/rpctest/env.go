package rpctest

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/xdslens/xdslens/internal/testing/xdstest"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/backends"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/controlplane"
	"github.com/xdslens/xdslens/xdsclient"
	"github.com/xdslens/xdslens/xdsgrpc"
)

// NodeID is the node ID of Env's bootstrap; errors that reach RPCs name it.
const NodeID = "dataplane-test"

// Env is a go-control-plane server, backends, and a pool of xDS clients of
// that server with an xdslens resolver of the pool. Everything it starts
// stops when the test ends.
type Env struct {
	T         testing.TB
	CP        *controlplane.Server
	Backends  []*backends.Backend
	Bootstrap string // the bootstrap JSON of Pool, for any other xDS client
	Pool      *xdsclient.Pool
	Builder   *xdsgrpc.Builder // the resolver that Dial's channels use

	version int
}

// NewEnv starts a control plane and nBackends backends, and makes a pool
// and a resolver (with opts) of that control plane.
func NewEnv(t testing.TB, nBackends int, opts ...xdsgrpc.Option) *Env {
	t.Helper()
	return NewEnvWith(t, nBackends, nil, opts...)
}

// NewEnvWith is NewEnv with options for the control plane, such as a
// service it serves beside discovery (controlplane.WithService: an LRS
// service for the clusters with lrs_server self).
func NewEnvWith(t testing.TB, nBackends int, cpOpts []controlplane.Option, opts ...xdsgrpc.Option) *Env {
	t.Helper()
	ctx := xdstest.Context(t)
	cp, err := controlplane.Start(ctx, "127.0.0.1:0", cpOpts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cp.Stop)
	e := &Env{T: t, CP: cp}
	for range nBackends {
		b, err := backends.Start()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(b.Stop)
		e.Backends = append(e.Backends, b)
	}
	bs := xdstest.Bootstrap{Servers: []string{cp.Addr()}, Node: fmt.Sprintf(`{"id": %q}`, NodeID)}
	e.Bootstrap = bs.JSON()
	e.Pool = xdsclient.NewPool(bs.Parse(t), xdstest.ClientOptions()...)
	e.Builder = xdsgrpc.NewBuilder(e.Pool, opts...)
	return e
}

// Addr returns the address of backend i.
func (e *Env) Addr(i int) string { return e.Backends[i].Addr() }

// Set serves resources as the next version of the configuration.
func (e *Env) Set(resources ...proto.Message) {
	e.T.Helper()
	e.version++
	if err := e.CP.SetResources(xdstest.Context(e.T), NodeID, strconv.Itoa(e.version), resources...); err != nil {
		e.T.Fatal(err)
	}
}

// Dial returns a channel to target through Builder, closed when the test
// ends. Only Builder and T need to be set for it.
func (e *Env) Dial(target string, opts ...grpc.DialOption) *grpc.ClientConn {
	e.T.Helper()
	opts = append(append(e.Builder.DialOptions(), grpc.WithTransportCredentials(insecure.NewCredentials())), opts...)
	conn, err := grpc.NewClient(target, opts...)
	if err != nil {
		e.T.Fatal(err)
	}
	e.T.Cleanup(func() { conn.Close() })
	return conn
}

// Outcome is what one RPC saw.
type Outcome struct {
	Backend string // the address of the backend that answered, "" when none
	Cluster string // the cluster xdslens picked (xdsgrpc.CallInfo), "" on other channels
	Err     error  // nil when a backend answered, whatever it answered
}

// Call makes one unary RPC of method on conn, with md as metadata pairs,
// and says where it went. The backends answer every method (unknown ones
// with UNIMPLEMENTED), so any method name can be routed.
func Call(ctx context.Context, conn *grpc.ClientConn, method string, md ...string) Outcome {
	var p peer.Peer
	var info xdsgrpc.CallInfo
	if len(md) > 0 {
		ctx = metadata.AppendToOutgoingContext(ctx, md...)
	}
	err := conn.Invoke(xdsgrpc.WithCallInfo(ctx, &info), method, &emptypb.Empty{}, &emptypb.Empty{}, grpc.Peer(&p))
	o := Outcome{Cluster: info.Cluster, Err: err}
	if p.Addr != nil {
		o.Backend = p.Addr.String()
		if status.Code(err) == codes.Unimplemented {
			o.Err = nil
		}
	}
	return o
}

// Code returns the name of err's status code.
func Code(err error) string { return status.Code(err).String() }

// Poll calls cond until it returns true or ctx ends, and reports whether it
// did. What RPCs see changes with connections and configs that a test
// cannot wait on directly, so it asks again every 10ms; each cond gets a
// context of at most a second.
func Poll(ctx context.Context, cond func(ctx context.Context) bool) bool {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		c, cancel := context.WithTimeout(ctx, time.Second)
		ok := cond(c)
		cancel()
		if ok {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-tick.C:
		}
	}
}
