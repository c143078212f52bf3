// Package redact removes secrets from xDS resources before they are shown:
// the fields that the xDS APIs mark with the udpa.annotations.sensitive
// option (private keys, passwords, shared secrets), and a few that they do
// not mark but that exist to carry credentials or key material, possibly
// packed in a type this program does not know: a gRPC service's channel and
// call credentials (tokens among them), and the deprecated certificate
// provider configs and custom_tls_certificate_selector of a TLS context.
// CSDS and xdswatch pass every resource they print through it.
//
// gRPC never takes private keys from a control plane, and the client
// rejects TLS contexts that carry them ([Find] names the field), but a
// rejected resource is still shown (CSDS failed_configuration), and a
// resource may carry secrets in extensions the client ignores (an optional
// HTTP filter's config). In a redacted message every string and bytes
// value inside a sensitive field is replaced by "[redacted]", and a message
// packed there in a type that is not linked in is dropped; the rest of the
// resource is unchanged.
//
// Finding out that a resource holds nothing sensitive is cheap: its wire
// format is read without unmarshalling, following only the fields whose
// types can lead to a sensitive field or an Any (computed once from the
// linked-in descriptors). Only a resource that holds a secret is
// unmarshalled, redacted and marshalled again.
package redact

import (
	"sync"

	udpaannotations "github.com/cncf/xds/go/udpa/annotations"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdslens/xdslens/internal/wire"
)

// Redacted replaces every string and bytes value of a sensitive field.
const Redacted = "[redacted]"

// Bytes returns the serialized message of type typeURL with its sensitive
// fields redacted, and whether anything was redacted. b is returned as it is
// when nothing needs redacting or the type is not linked in (then nothing
// can be known about its fields). Bytes that do not parse are returned as
// they are unless they may hold a secret, in which case nil and true are
// returned: bytes that cannot be inspected are not shown.
func Bytes(typeURL string, b []byte) ([]byte, bool) {
	if !mayHoldSecret(typeURL, b) {
		return b, false
	}
	mt, err := protoregistry.GlobalTypes.FindMessageByURL(typeURL)
	if err != nil {
		return b, false
	}
	m := mt.New().Interface()
	if err := proto.Unmarshal(b, m); err != nil {
		return nil, true
	}
	if !Message(m) {
		return b, false
	}
	out, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		return nil, true
	}
	return out, true
}

// Any is Bytes for an Any: it returns a, or a redacted copy of it.
func Any(a *anypb.Any) *anypb.Any {
	b, changed := Bytes(a.GetTypeUrl(), a.GetValue())
	if !changed {
		return a
	}
	return &anypb.Any{TypeUrl: a.GetTypeUrl(), Value: b}
}

// Message redacts the sensitive fields of m in place, including those of
// messages packed in Anys whose types are linked in, and reports whether it
// changed anything.
func Message(m proto.Message) bool { return walk(m.ProtoReflect(), false) }

// walk redacts r; inSecret is set inside a sensitive field, where every
// string and bytes value is replaced.
func walk(r protoreflect.Message, inSecret bool) bool {
	if r.Descriptor().FullName() == anyName {
		return walkAny(r, inSecret)
	}
	changed := false
	r.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		secret := inSecret || isSensitive(fd)
		switch {
		case fd.IsList():
			l := v.List()
			for i := 0; i < l.Len(); i++ {
				if nv, ok := redactValue(fd, l.Get(i), secret); ok {
					l.Set(i, nv)
					changed = true
				}
			}
		case fd.IsMap():
			vd := fd.MapValue()
			v.Map().Range(func(k protoreflect.MapKey, mv protoreflect.Value) bool {
				if nv, ok := redactValue(vd, mv, secret); ok {
					v.Map().Set(k, nv)
					changed = true
				}
				return true
			})
		default:
			if nv, ok := redactValue(fd, v, secret); ok {
				r.Set(fd, nv)
				changed = true
			}
		}
		return true
	})
	return changed
}

// redactValue returns the redacted form of one value of field fd, and false
// when it is unchanged. Messages are redacted in place.
func redactValue(fd protoreflect.FieldDescriptor, v protoreflect.Value, secret bool) (protoreflect.Value, bool) {
	switch fd.Kind() {
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return v, walk(v.Message(), secret)
	case protoreflect.StringKind:
		if secret && v.String() != Redacted {
			return protoreflect.ValueOfString(Redacted), true
		}
	case protoreflect.BytesKind:
		if secret && string(v.Bytes()) != Redacted {
			return protoreflect.ValueOfBytes([]byte(Redacted)), true
		}
	}
	return v, false
}

// walkAny redacts the message packed in the Any r, when its type is linked
// in. Inside a sensitive field, an Any whose type is unknown has its value
// replaced as a whole.
func walkAny(r protoreflect.Message, inSecret bool) bool {
	a, ok := r.Interface().(*anypb.Any)
	if !ok {
		return false
	}
	mt, err := protoregistry.GlobalTypes.FindMessageByURL(a.GetTypeUrl())
	if err != nil {
		if inSecret && len(a.GetValue()) > 0 {
			a.Value = nil
			return true
		}
		return false
	}
	inner := mt.New()
	if err := proto.Unmarshal(a.GetValue(), inner.Interface()); err != nil {
		if inSecret || mayHoldSecret(a.GetTypeUrl(), a.GetValue()) {
			a.Value = nil
			return true
		}
		return false
	}
	if !walk(inner, inSecret) {
		return false
	}
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(inner.Interface())
	if err != nil {
		b = nil
	}
	a.Value = b
	return true
}

const anyName = protoreflect.FullName("google.protobuf.Any")

// alsoSensitive are the fields treated as sensitive that the xDS APIs do
// not mark: they exist to carry credentials or certificates and keys, in
// messages packed in types that may not be linked in.
var alsoSensitive = map[protoreflect.FullName]bool{
	"envoy.config.core.v3.GrpcService.GoogleGrpc.channel_credentials":                                                                         true,
	"envoy.config.core.v3.GrpcService.GoogleGrpc.call_credentials":                                                                            true,
	"envoy.extensions.transport_sockets.tls.v3.CommonTlsContext.tls_certificate_certificate_provider":                                         true,
	"envoy.extensions.transport_sockets.tls.v3.CommonTlsContext.validation_context_certificate_provider":                                      true,
	"envoy.extensions.transport_sockets.tls.v3.CommonTlsContext.custom_tls_certificate_selector":                                              true,
	"envoy.extensions.transport_sockets.tls.v3.CommonTlsContext.CombinedCertificateValidationContext.validation_context_certificate_provider": true,
}

func isSensitive(fd protoreflect.FieldDescriptor) bool {
	if alsoSensitive[fd.FullName()] {
		return true
	}
	opts := fd.Options()
	if opts == nil {
		return false
	}
	v, ok := proto.GetExtension(opts, udpaannotations.E_Sensitive).(bool)
	return ok && v
}

// mayHoldSecret reports whether the serialized message b of type typeURL
// holds a sensitive field, reading the wire format without unmarshalling:
// it descends only into the fields whose types can lead to a sensitive
// field or to an Any, and into the Anys whose types are linked in. Bytes it
// cannot read count as holding one.
func mayHoldSecret(typeURL string, b []byte) bool {
	p, ok := linked()[string(typeName(typeURL))]
	return ok && p.holdsSecret(b, 0)
}

// maxDepth bounds the nesting holdsSecret follows; deeper bytes count as
// holding a secret (proto.Unmarshal refuses them too).
const maxDepth = 100

// plan says, for a message type that can lead to a sensitive field or an
// Any, what each of its fields leads to.
type plan struct {
	isAny bool
	// fields is indexed by field number; large numbers are in more.
	fields []step
	more   map[protowire.Number]step
}

// step is what a field leads to: a secret, or a message to look into (nil:
// nothing).
type step struct {
	secret bool
	sub    *plan
}

func (p *plan) step(n protowire.Number) step {
	if int(n) < len(p.fields) {
		return p.fields[n]
	}
	return p.more[n]
}

func (p *plan) holdsSecret(b []byte, depth int) bool {
	if depth > maxDepth {
		return true
	}
	if p.isAny {
		return anyHoldsSecret(b, depth)
	}
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return true
		}
		b = b[n:]
		var value []byte
		if typ == protowire.BytesType {
			value, n = protowire.ConsumeBytes(b)
		} else {
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			return true
		}
		b = b[n:]
		st := p.step(num)
		if st.secret {
			return true
		}
		if st.sub != nil && typ == protowire.BytesType && st.sub.holdsSecret(value, depth+1) {
			return true
		}
	}
	return false
}

// anyHoldsSecret checks the serialized Any b.
func anyHoldsSecret(b []byte, depth int) bool {
	var url, value []byte
	err := wire.BytesFields(b, func(num protowire.Number, v []byte) error {
		switch num {
		case 1:
			url = v
		case 2:
			value = v
		}
		return nil
	})
	if err != nil {
		return true
	}
	p, ok := linked()[string(typeName(url))]
	return ok && p.holdsSecret(value, depth+1)
}

// maxDenseField is the largest field number a plan indexes in a slice.
const maxDenseField = 256

// linked holds the plans of the linked-in message types that can hold, at
// any depth, a sensitive field or an Any, by full name.
var linked = sync.OnceValue(func() map[string]*plan {
	// usedBy[n] lists the message types with a field of type n; the types
	// with a plan are Any, those with a sensitive field, and every type
	// using one of them.
	usedBy := map[protoreflect.FullName][]protoreflect.FullName{}
	descs := map[protoreflect.FullName]protoreflect.MessageDescriptor{}
	queue := []protoreflect.FullName{anyName}
	var add func(md protoreflect.MessageDescriptor)
	add = func(md protoreflect.MessageDescriptor) {
		if _, ok := descs[md.FullName()]; ok {
			return
		}
		descs[md.FullName()] = md
		fields := md.Fields()
		for i := 0; i < fields.Len(); i++ {
			fd := fields.Get(i)
			if isSensitive(fd) {
				queue = append(queue, md.FullName())
			}
			if fd.Kind() == protoreflect.MessageKind || fd.Kind() == protoreflect.GroupKind {
				usedBy[fd.Message().FullName()] = append(usedBy[fd.Message().FullName()], md.FullName())
				add(fd.Message())
			}
		}
	}
	protoregistry.GlobalTypes.RangeMessages(func(mt protoreflect.MessageType) bool {
		add(mt.Descriptor())
		return true
	})
	plans := map[protoreflect.FullName]*plan{}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		if _, ok := plans[n]; !ok {
			plans[n] = &plan{isAny: n == anyName}
			queue = append(queue, usedBy[n]...)
		}
	}
	out := make(map[string]*plan, len(plans))
	for name, p := range plans {
		out[string(name)] = p
		md, ok := descs[name]
		if !ok || p.isAny {
			continue
		}
		fields := md.Fields()
		for i := 0; i < fields.Len(); i++ {
			fd := fields.Get(i)
			st := step{secret: isSensitive(fd)}
			if fd.Kind() == protoreflect.MessageKind || fd.Kind() == protoreflect.GroupKind {
				st.sub = plans[fd.Message().FullName()]
			}
			if !st.secret && st.sub == nil {
				continue
			}
			if n := fd.Number(); n < maxDenseField {
				if int(n) >= len(p.fields) {
					p.fields = append(p.fields, make([]step, int(n)+1-len(p.fields))...)
				}
				p.fields[n] = st
			} else {
				if p.more == nil {
					p.more = map[protowire.Number]step{}
				}
				p.more[n] = st
			}
		}
	}
	return out
})

// typeName returns the full message name of a type URL: what follows its
// last '/'.
func typeName[S ~string | ~[]byte](url S) S {
	for i := len(url) - 1; i >= 0; i-- {
		if url[i] == '/' {
			return url[i+1:]
		}
	}
	return url
}
