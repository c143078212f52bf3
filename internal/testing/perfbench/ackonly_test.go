package perfbench

import (
	"context"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// bytesCodec marshals requests as protobuf does and hands a response over
// as its bytes, unread.
type bytesCodec struct{}

func (bytesCodec) Name() string { return "proto" }

func (bytesCodec) Marshal(v any) (mem.BufferSlice, error) {
	b, err := proto.Marshal(v.(proto.Message))
	return mem.BufferSlice{mem.SliceBuffer(b)}, err
}

func (bytesCodec) Unmarshal(data mem.BufferSlice, v any) error {
	*(v.(*[]byte)) = data.Materialize()
	return nil
}

// ackOnly is the floor under any State of the World client: a stream that
// receives each response as bytes, reads only its version and nonce, and
// ACKs, naming every cluster, with nothing decoded and nothing kept.
type ackOnly struct {
	cc     *grpc.ClientConn
	stream grpc.ClientStream
	cancel context.CancelFunc
	names  []string
}

var adsDesc = &grpc.StreamDesc{StreamName: "StreamAggregatedResources", ServerStreams: true, ClientStreams: true}

// dialAckOnly opens an ack-only stream to e's server and subscribes to
// names.
func (e *env) dialAckOnly(names []string) *ackOnly {
	cc := e.dial()
	ctx, cancel := context.WithCancel(e.ctx)
	a := &ackOnly{cc: cc, cancel: cancel, names: names}
	var err error
	a.stream, err = cc.NewStream(ctx, adsDesc, "/envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources", grpc.ForceCodecV2(bytesCodec{}))
	if err == nil {
		err = a.stream.SendMsg(&discoveryv3.DiscoveryRequest{Node: &corev3.Node{Id: e.node}, TypeUrl: cdsURL, ResourceNames: names})
	}
	if err != nil {
		a.close()
		e.tb.Fatal(err)
	}
	return a
}

// receive reads one response and ACKs it. It returns how many resources
// the response carried, counted, not read.
func (a *ackOnly) receive(tb testing.TB) int {
	var b []byte
	if err := a.stream.RecvMsg(&b); err != nil {
		tb.Fatal(err)
	}
	var version, nonce string
	resources := 0
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			tb.Fatal("malformed response")
		}
		b = b[n:]
		n = protowire.ConsumeFieldValue(num, typ, b)
		if n < 0 {
			tb.Fatal("malformed response")
		}
		if v, m := protowire.ConsumeBytes(b); typ == protowire.BytesType && m == n {
			switch num {
			case 1:
				version = string(v)
			case 2:
				resources++
			case 5:
				nonce = string(v)
			}
		}
		b = b[n:]
	}
	if err := a.stream.SendMsg(&discoveryv3.DiscoveryRequest{TypeUrl: cdsURL, VersionInfo: version, ResponseNonce: nonce, ResourceNames: a.names}); err != nil {
		tb.Fatal(err)
	}
	return resources
}

func (a *ackOnly) close() {
	a.cancel()
	a.cc.Close()
}
