package rls

import (
	"sync"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	_ "google.golang.org/protobuf/types/known/durationpb" // registers google/protobuf/duration.proto
)

// The messages of grpc/lookup/v1/rls_config.proto that the RLS cluster
// specifier plugin (gRFC A28) carries. No importable Go package holds them,
// so they are described here, field for field, and read with dynamicpb.
// The descriptors are kept out of the global registry so that they cannot
// clash with a program that links the generated package.

// lookupFile returns the descriptor of the rls_config.proto subset.
var lookupFile = sync.OnceValue(func() protoreflect.FileDescriptor {
	const (
		str    = descriptorpb.FieldDescriptorProto_TYPE_STRING
		msg    = descriptorpb.FieldDescriptorProto_TYPE_MESSAGE
		boolT  = descriptorpb.FieldDescriptorProto_TYPE_BOOL
		int64T = descriptorpb.FieldDescriptorProto_TYPE_INT64
		opt    = descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL
		rep    = descriptorpb.FieldDescriptorProto_LABEL_REPEATED
	)
	field := func(name string, num int32, label descriptorpb.FieldDescriptorProto_Label, typ descriptorpb.FieldDescriptorProto_Type, typeName string) *descriptorpb.FieldDescriptorProto {
		f := &descriptorpb.FieldDescriptorProto{Name: proto.String(name), Number: proto.Int32(num), Label: label.Enum(), Type: typ.Enum(), JsonName: proto.String(name)}
		if typeName != "" {
			f.TypeName = proto.String(typeName)
		}
		return f
	}
	message := func(name string, fields ...*descriptorpb.FieldDescriptorProto) *descriptorpb.DescriptorProto {
		return &descriptorpb.DescriptorProto{Name: proto.String(name), Field: fields}
	}
	const pkg = ".grpc.lookup.v1."
	keyBuilder := message("GrpcKeyBuilder",
		field("names", 1, rep, msg, pkg+"GrpcKeyBuilder.Name"),
		field("headers", 2, rep, msg, pkg+"NameMatcher"),
		field("extra_keys", 3, opt, msg, pkg+"GrpcKeyBuilder.ExtraKeys"),
		field("constant_keys", 4, rep, msg, pkg+"GrpcKeyBuilder.ConstantKeysEntry"),
	)
	entry := message("ConstantKeysEntry", field("key", 1, opt, str, ""), field("value", 2, opt, str, ""))
	entry.Options = &descriptorpb.MessageOptions{MapEntry: proto.Bool(true)}
	keyBuilder.NestedType = []*descriptorpb.DescriptorProto{
		message("Name", field("service", 1, opt, str, ""), field("method", 2, opt, str, "")),
		message("ExtraKeys", field("host", 1, opt, str, ""), field("service", 2, opt, str, ""), field("method", 3, opt, str, "")),
		entry,
	}
	fd := &descriptorpb.FileDescriptorProto{
		Name:       proto.String("xdslens/grpc/lookup/v1/rls_config.proto"),
		Package:    proto.String("grpc.lookup.v1"),
		Syntax:     proto.String("proto3"),
		Dependency: []string{"google/protobuf/duration.proto"},
		MessageType: []*descriptorpb.DescriptorProto{
			message("NameMatcher",
				field("key", 1, opt, str, ""),
				field("names", 2, rep, str, ""),
				field("required_match", 3, opt, boolT, "")),
			keyBuilder,
			message("RouteLookupConfig",
				field("grpc_keybuilders", 2, rep, msg, pkg+"GrpcKeyBuilder"),
				field("lookup_service", 3, opt, str, ""),
				field("lookup_service_timeout", 4, opt, msg, ".google.protobuf.Duration"),
				field("max_age", 5, opt, msg, ".google.protobuf.Duration"),
				field("stale_age", 6, opt, msg, ".google.protobuf.Duration"),
				field("cache_size_bytes", 7, opt, int64T, ""),
				field("valid_targets", 8, rep, str, ""),
				field("default_target", 9, opt, str, "")),
			message("RouteLookupClusterSpecifier",
				field("route_lookup_config", 1, opt, msg, pkg+"RouteLookupConfig")),
		},
	}
	f, err := protodesc.NewFile(fd, protoregistry.GlobalFiles)
	if err != nil {
		panic("xdsresource: rls_config.proto descriptor: " + err.Error())
	}
	return f
})

// lookupMessage returns the descriptor of grpc.lookup.v1.<name>.
func lookupMessage(name protoreflect.Name) protoreflect.MessageDescriptor {
	return lookupFile().Messages().ByName(name)
}
