package redact

import (
	"cmp"
	"fmt"
	"slices"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/known/anypb"
)

// Find reports whether the serialized message b of type typeURL holds a
// sensitive field (one that Bytes redacts), and returns the path of the
// first one in field order,
// such as "common_tls_context.tls_certificates[0].private_key". Messages
// packed in Anys whose types are linked in are looked into; their fields
// continue the path of the Any ("typed_config.tls_certificate.private_key").
// Bytes that hold a sensitive field but cannot be unmarshalled count as
// one, at the path of the message that holds them ("" for b itself). As
// with Bytes, a message with no sensitive field is read without being
// unmarshalled.
func Find(typeURL string, b []byte) (path string, found bool) {
	if !mayHoldSecret(typeURL, b) {
		return "", false
	}
	mt, err := protoregistry.GlobalTypes.FindMessageByURL(typeURL)
	if err != nil {
		return "", false
	}
	m := mt.New()
	if err := proto.Unmarshal(b, m.Interface()); err != nil {
		return "", true
	}
	return find(m, "")
}

// find looks for a sensitive field in r, whose path is at.
func find(r protoreflect.Message, at string) (string, bool) {
	if r.Descriptor().FullName() == anyName {
		return findInAny(r, at)
	}
	if _, ok := linked()[string(r.Descriptor().FullName())]; !ok {
		return "", false // no field of r can lead to a secret
	}
	fields := r.Descriptor().Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		if !r.Has(fd) {
			continue
		}
		path := join(at, string(fd.Name()))
		if isSensitive(fd) {
			return path, true
		}
		if fd.Kind() != protoreflect.MessageKind && fd.Kind() != protoreflect.GroupKind {
			continue
		}
		v := r.Get(fd)
		switch {
		case fd.IsList():
			l := v.List()
			for j := 0; j < l.Len(); j++ {
				if p, ok := find(l.Get(j).Message(), fmt.Sprintf("%s[%d]", path, j)); ok {
					return p, true
				}
			}
		case fd.IsMap():
			if fd.MapValue().Message() == nil {
				continue
			}
			var keys []protoreflect.MapKey
			v.Map().Range(func(k protoreflect.MapKey, _ protoreflect.Value) bool {
				keys = append(keys, k)
				return true
			})
			slices.SortFunc(keys, func(a, b protoreflect.MapKey) int {
				return cmp.Compare(a.String(), b.String())
			})
			for _, k := range keys {
				if p, ok := find(v.Map().Get(k).Message(), fmt.Sprintf("%s[%q]", path, k.String())); ok {
					return p, true
				}
			}
		default:
			if p, ok := find(v.Message(), path); ok {
				return p, true
			}
		}
	}
	return "", false
}

// findInAny looks into the message packed in the Any r, at at, when its
// type is linked in.
func findInAny(r protoreflect.Message, at string) (string, bool) {
	a, ok := r.Interface().(*anypb.Any)
	if !ok || !mayHoldSecret(a.GetTypeUrl(), a.GetValue()) {
		return "", false
	}
	mt, err := protoregistry.GlobalTypes.FindMessageByURL(a.GetTypeUrl())
	if err != nil {
		return "", false
	}
	inner := mt.New()
	if err := proto.Unmarshal(a.GetValue(), inner.Interface()); err != nil {
		return at, true
	}
	return find(inner, at)
}

func join(at, name string) string {
	if at == "" {
		return name
	}
	return at + "." + name
}
