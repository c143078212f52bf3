package admin

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/xdslens/xdslens/xdsgrpc/history"
)

// ConfigHistoryService is the gRPC service that serves the channels'
// config histories, ConfigHistoryList its one method.
const (
	ConfigHistoryService = "xdslens.admin.v1.ConfigHistory"
	ConfigHistoryList    = "/" + ConfigHistoryService + "/List"
)

// configHistoryFile is the proto file that declares ConfigHistoryService,
// for server reflection:
//
//	syntax = "proto3";
//	package xdslens.admin.v1;
//	import "google/protobuf/empty.proto";
//	import "google/protobuf/struct.proto";
//	service ConfigHistory {
//	  rpc List(google.protobuf.Empty) returns (google.protobuf.Struct);
//	}
const configHistoryFile = "xdslens/admin/v1/config_history.proto"

// WithConfigHistory serves the config histories of the channels of srcs
// (such as *xdsgrpc.Builder values; see package history) as
// ConfigHistoryService: its List method, read-only, answers a
// google.protobuf.Struct whose JSON is
//
//	{"channels": [<history.Channel>, ...]}
//
// with the channels of every source, in order, each as package history
// gives its JSON names.
func WithConfigHistory(srcs ...history.Source) Option {
	return optionFunc(func(c *config) { c.histories = append(c.histories, srcs...) })
}

// configHistoryServer is what the service's handler calls.
type configHistoryServer interface {
	list(context.Context) (*structpb.Struct, error)
}

// historyService serves the histories of srcs.
type historyService struct{ srcs []history.Source }

// list answers List: every channel of every source.
func (s *historyService) list(context.Context) (*structpb.Struct, error) {
	channels := []history.Channel{}
	for _, src := range s.srcs {
		channels = append(channels, src.ConfigHistory()...)
	}
	b, err := json.Marshal(struct {
		Channels []history.Channel `json:"channels"`
	}{channels})
	if err != nil {
		return nil, status.Errorf(codes.Internal, "config history: %v", err)
	}
	out := new(structpb.Struct)
	if err := protojson.Unmarshal(b, out); err != nil {
		return nil, status.Errorf(codes.Internal, "config history: %v", err)
	}
	return out, nil
}

var configHistoryDesc = grpc.ServiceDesc{
	ServiceName: ConfigHistoryService,
	HandlerType: (*configHistoryServer)(nil),
	Methods: []grpc.MethodDesc{{
		MethodName: "List",
		Handler: func(srv any, ctx context.Context, dec func(any) error, interceptor grpc.UnaryServerInterceptor) (any, error) {
			if err := dec(new(emptypb.Empty)); err != nil {
				return nil, err
			}
			s := srv.(configHistoryServer)
			if interceptor == nil {
				return s.list(ctx)
			}
			info := &grpc.UnaryServerInfo{Server: srv, FullMethod: ConfigHistoryList}
			return interceptor(ctx, new(emptypb.Empty), info, func(ctx context.Context, _ any) (any, error) { return s.list(ctx) })
		},
	}},
	Metadata: configHistoryFile,
}

// registerConfigHistory registers the service over srcs on r.
func registerConfigHistory(r Registrar, srcs []history.Source) {
	registerConfigHistoryFile()
	r.RegisterService(&configHistoryDesc, &historyService{srcs: srcs})
}

// registerConfigHistoryFile adds configHistoryFile to the process's
// proto registry, once, so that server reflection describes the service.
var registerConfigHistoryFile = sync.OnceFunc(func() {
	fdp := &descriptorpb.FileDescriptorProto{
		Name:       proto.String(configHistoryFile),
		Package:    proto.String("xdslens.admin.v1"),
		Dependency: []string{"google/protobuf/empty.proto", "google/protobuf/struct.proto"},
		Service: []*descriptorpb.ServiceDescriptorProto{{
			Name: proto.String("ConfigHistory"),
			Method: []*descriptorpb.MethodDescriptorProto{{
				Name:       proto.String("List"),
				InputType:  proto.String(".google.protobuf.Empty"),
				OutputType: proto.String(".google.protobuf.Struct"),
			}},
		}},
		Syntax: proto.String("proto3"),
	}
	fd, err := protodesc.NewFile(fdp, protoregistry.GlobalFiles)
	if err == nil {
		err = protoregistry.GlobalFiles.RegisterFile(fd)
	}
	if err != nil {
		// The descriptor is a constant: it is valid, or this is a bug.
		panic(fmt.Sprintf("admin: %s: %v", configHistoryFile, err))
	}
})
