package transport

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/protobuf/proto"

	"github.com/xdslens/xdslens/xdsclient/bootstrap"
	"github.com/xdslens/xdslens/xdsclient/internal/xerr"
)

// Dial makes a gRPC channel to the xDS server s: its channel and call
// credentials, keepalive, and the limit on a received message.
func Dial(s *bootstrap.ServerConfig, keepaliveTime, keepaliveTimeout time.Duration, maxResponseSize int) (*grpc.ClientConn, error) {
	opts, err := s.DialOptions()
	if err != nil {
		return nil, xerr.Redacted(fmt.Errorf("xDS server %s: %w", xerr.Shown(s.ShownURI()), err), s.Redact)
	}
	opts = append(opts,
		grpc.WithKeepaliveParams(keepalive.ClientParameters{Time: keepaliveTime, Timeout: keepaliveTimeout}),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxResponseSize)))
	// The one place the real URI is used: the dial, through the resolver
	// of a target that shows it with its credentials hidden, as
	// everything else does.
	target, hiddenOpts, err := dialTarget(s)
	if err != nil {
		return nil, fmt.Errorf("xDS server %s: %w", xerr.Shown(s.ShownURI()), err)
	}
	cc, err := grpc.NewClient(target, append(opts, hiddenOpts...)...)
	if err != nil {
		return nil, xerr.Redacted(fmt.Errorf("xDS server %s: %w", xerr.Shown(s.ShownURI()), err), s.Redact)
	}
	return cc, nil
}

// DialGRPC is the client's Dialer: a gRPC channel (Dial) to cfg.Server,
// with cfg's keepalive and response size limit, whose ADS streams hand
// their responses over as the bytes received (codec).
func DialGRPC(cfg Config) (Channel, error) {
	cc, err := Dial(cfg.Server, cfg.KeepaliveTime, cfg.KeepaliveTimeout, cfg.MaxResponseSize)
	if err != nil {
		return nil, err
	}
	return grpcChannel{cc}, nil
}

// grpcChannel is a Channel over a gRPC channel.
type grpcChannel struct{ cc *grpc.ClientConn }

// The ADS methods, and what a stream of each is.
var (
	sotwDesc  = &grpc.StreamDesc{StreamName: "StreamAggregatedResources", ServerStreams: true, ClientStreams: true}
	deltaDesc = &grpc.StreamDesc{StreamName: "DeltaAggregatedResources", ServerStreams: true, ClientStreams: true}
)

const (
	sotwMethod  = "/envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources"
	deltaMethod = "/envoy.service.discovery.v3.AggregatedDiscoveryService/DeltaAggregatedResources"
)

// NewStream opens an ADS stream of either protocol, with the codec.
func (g grpcChannel) NewStream(ctx context.Context, delta bool) (Stream, error) {
	desc, method := sotwDesc, sotwMethod
	if delta {
		desc, method = deltaDesc, deltaMethod
	}
	st, err := g.cc.NewStream(ctx, desc, method, grpc.ForceCodecV2(codec{}))
	if err != nil {
		return nil, err
	}
	return grpcStream{st}, nil
}

func (g grpcChannel) State() connectivity.State { return g.cc.GetState() }

func (g grpcChannel) WaitForStateChange(ctx context.Context, s connectivity.State) bool {
	return g.cc.WaitForStateChange(ctx, s)
}

func (g grpcChannel) Close() { g.cc.Close() }

// grpcStream is an ADS stream of either protocol.
type grpcStream struct{ st grpc.ClientStream }

// Recv hands over the buffer of gRPC's pool the response was read into,
// not a copy; release gives it back.
func (s grpcStream) Recv() ([]byte, func(), error) {
	var f frame
	if err := s.st.RecvMsg(&f); err != nil {
		return nil, nil, err
	}
	return f.buf.ReadOnlyData(), f.buf.Free, nil
}

func (s grpcStream) Send(req proto.Message) error { return s.st.SendMsg(req) }
