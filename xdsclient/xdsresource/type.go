package xdsresource

import (
	"strings"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdslens/xdslens/xdsclient/xdsresource/internal/decoding"
)

// TypeURLPrefix is the prefix that every xDS type URL starts with.
const TypeURLPrefix = decoding.TypeURLPrefix

// Type describes one kind of xDS resource. Implementations must be safe for
// concurrent use and are usually stateless values. TypeURL, ShortName and
// FullState return the same constants on every call: a client reads them
// when the type is registered and at each Watch, and keeps what they said.
// A client calls every method of a Type (and a NameReader's ReadName) with
// no lock of its own held, so they may call the client.
type Type interface {
	// TypeURL is the full type URL, for example
	// "type.googleapis.com/envoy.config.cluster.v3.Cluster".
	TypeURL() string
	// ShortName is a short, human name such as "cds", or "" when the type
	// has none.
	ShortName() string
	// FullState reports whether a State-of-the-World response carries every
	// subscribed resource of this type (true for Listener and Cluster), so
	// that a resource missing from a response has been deleted.
	FullState() bool
	// Decode unmarshals and validates one resource. It returns the
	// resource's name whenever it can be determined, even when the resource
	// is invalid, so that the error can be attributed to it. A nil error
	// means value is valid and ready for use. Decode must be deterministic:
	// the client keeps valid resources as bytes and decodes them again for
	// a watcher added later.
	Decode(opts DecodeOptions, resource *anypb.Any) (name string, value any, err error)
}

// NameReader is implemented by a Type that can read a resource's name from
// its serialized bytes without decoding the rest. The client uses it to
// recognise, before decoding, the resources of a response whose bytes it
// already holds, so that an unchanged resource costs a name lookup and a
// byte comparison. A Type without it is decoded in full every time; an
// unchanged resource is then recognised after decoding and, as with a
// NameReader, not delivered again.
type NameReader interface {
	// ReadName returns the name that Decode would return for the
	// serialized resource b (the value of its Any), and false when it
	// cannot tell without decoding. The name may share b's memory.
	ReadName(b []byte) (name []byte, ok bool)
}

// ReadStringField returns the value of the string or bytes field num of the
// serialized message b (its last occurrence, as decoding would keep) without
// decoding the message. ok is false when the field is absent or b is
// malformed. It helps implement [NameReader] for messages whose name is a
// top-level field.
func ReadStringField(b []byte, num protowire.Number) (value []byte, ok bool) {
	for len(b) > 0 {
		n, typ, l := protowire.ConsumeTag(b)
		if l < 0 {
			return nil, false
		}
		b = b[l:]
		if n == num && typ == protowire.BytesType {
			v, l := protowire.ConsumeBytes(b)
			if l < 0 {
				return nil, false
			}
			value, ok = v, true
			b = b[l:]
			continue
		}
		l = protowire.ConsumeFieldValue(n, typ, b)
		if l < 0 {
			return nil, false
		}
		b = b[l:]
	}
	return value, ok
}

// DecodeOptions carries what a Type may need to know about where a resource
// came from.
type DecodeOptions struct {
	// ServerURI is the server_uri of the xDS server that sent the
	// resource, as the client shows it (bootstrap.ServerConfig.ShownURI:
	// credentials in it hidden).
	ServerURI string
	// TrustedServer reports whether that server has the
	// "trusted_xds_server" feature (gRFC A81), which allows settings that
	// are honoured only from trusted servers.
	TrustedServer bool
	// HasCertificateProvider reports whether the bootstrap has a
	// certificate provider instance of that name in its
	// "certificate_providers" (gRFC A29). TLS settings that name an
	// instance it does not know are rejected; nil knows none.
	HasCertificateProvider func(instance string) bool
}

// TypeName returns the type URL of t without its "type.googleapis.com/"
// prefix, as used in metrics labels and xdstp:// resource names, for example
// "envoy.config.cluster.v3.Cluster".
func TypeName(t Type) string {
	return strings.TrimPrefix(t.TypeURL(), TypeURLPrefix)
}
