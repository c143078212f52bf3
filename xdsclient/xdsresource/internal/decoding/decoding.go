// Package decoding holds what the decoders of package xdsresource and of its
// subpackages share: the type URLs of the wrappers they see, a message
// unmarshalled with its type named in the error, fractions and weights
// read as gRPC reads them, and the plurals of their summaries.
package decoding

import (
	"errors"
	"fmt"
	"math"
	"strings"

	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
)

// TypeURLPrefix is the prefix that every xDS type URL starts with.
const TypeURLPrefix = "type.googleapis.com/"

// Type URLs of the two TypedStruct wrappers, which carry a config as a
// JSON-like struct under the type URL of the config they stand for.
const (
	XDSTypedStructURL  = TypeURLPrefix + "xds.type.v3.TypedStruct"
	UDPATypedStructURL = TypeURLPrefix + "udpa.type.v1.TypedStruct"
)

// CanonicalTypeURL returns url with TypeURLPrefix before the type it
// names, which is what follows its last "/": the part before is not read,
// as protobuf's Any and gRPC C-core (ExtractXdsExtension in
// src/core/xds/grpc/xds_common_types_parser.cc) read a type URL, so
// "example.com/envoy.extensions.filters.http.router.v3.Router" names the
// router. A URL that is empty, has no "/" or ends with one names no type:
// an error.
func CanonicalTypeURL(url string) (string, error) {
	typ, err := ExtensionType(url)
	switch {
	case err != nil:
		return "", err
	case len(url) == len(TypeURLPrefix)+len(typ) && strings.HasPrefix(url, TypeURLPrefix):
		return url, nil // canonical already: no copy
	}
	return TypeURLPrefix + typ, nil
}

// TypeURLOf returns the type URL of m's message type.
func TypeURLOf(m proto.Message) string {
	return TypeURLPrefix + string(m.ProtoReflect().Descriptor().FullName())
}

// ExtensionType returns the message type that the type URL url names: the
// part after its last "/", whatever comes before, as gRPC C-core reads
// the type of an extension (ExtractXdsExtension). A URL that is empty,
// has no "/" or ends with one names no type and is an error, which
// starts with "type_url".
func ExtensionType(url string) (string, error) {
	i := strings.LastIndexByte(url, '/')
	switch {
	case url == "":
		return "", errors.New("type_url: not set")
	case i < 0 || i == len(url)-1:
		return "", fmt.Errorf("type_url: %q names no type (want PREFIX/TYPE)", url)
	}
	return url[i+1:], nil
}

// UnmarshalExtension decodes cfg, the typed_config of an extension, into
// the empty m, when the type that cfg's type URL names (ExtensionType, any
// prefix) is m's. Errors start with "typed_config" and say what is wrong:
// cfg unset, a type URL that names no type or another type, or bytes that
// do not decode.
func UnmarshalExtension(cfg *anypb.Any, m proto.Message) error {
	if cfg == nil {
		return errors.New("typed_config: not set")
	}
	t, err := ExtensionType(cfg.GetTypeUrl())
	if err != nil {
		return fmt.Errorf("typed_config.%v", err)
	}
	if want := m.ProtoReflect().Descriptor().FullName(); t != string(want) {
		return fmt.Errorf("typed_config: type %q is not supported, want %s", cfg.GetTypeUrl(), want)
	}
	if err := Unmarshal(cfg.GetValue(), m); err != nil {
		return fmt.Errorf("typed_config: %v", err)
	}
	return nil
}

// Unmarshal decodes b into m, which must be empty (new or reset), naming
// the message type in the error. Merging into an empty message is decoding
// it, without a Reset first.
func Unmarshal(b []byte, m proto.Message) error {
	if err := (proto.UnmarshalOptions{Merge: true}).Unmarshal(b, m); err != nil {
		return fmt.Errorf("cannot unmarshal %s: %v", m.ProtoReflect().Descriptor().FullName(), err)
	}
	return nil
}

// PerMillion converts a fractional percentage to parts per million, capped
// at one million.
func PerMillion(f *typev3.FractionalPercent) (uint32, error) {
	var scale uint64
	switch f.GetDenominator() {
	case typev3.FractionalPercent_HUNDRED:
		scale = 10_000
	case typev3.FractionalPercent_TEN_THOUSAND:
		scale = 100
	case typev3.FractionalPercent_MILLION:
		scale = 1
	default:
		return 0, fmt.Errorf("unsupported denominator %v", f.GetDenominator())
	}
	return uint32(min(uint64(f.GetNumerator())*scale, 1_000_000)), nil
}

// AddWeight adds w to *sum and reports whether the total still fits a
// uint32.
func AddWeight(sum *uint64, w uint32) bool {
	*sum += uint64(w)
	return *sum <= math.MaxUint32
}

// Plural returns "n thing" or "n things".
func Plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
