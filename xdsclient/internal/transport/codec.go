package transport

import (
	"fmt"
	"unicode/utf8"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/xdslens/xdslens/internal/wire"
	"github.com/xdslens/xdslens/xdsclient/internal/xdstp"
	"github.com/xdslens/xdslens/xdsclient/internal/xerr"
)

// codec is the gRPC codec of a Conn's ADS streams. It marshals requests as
// protobuf does, and hands a response over as the bytes received, which
// the Conn reads itself (ParseSotW, ParseDelta): the resources of an
// Update are slices of those bytes rather than a protobuf Any each, so a
// response costs a few allocations however many resources it carries,
// and a resource whose bytes are those held costs none. The bytes are
// gRPC's buffer (one of its pool's), not a copy: the Conn gives it back
// once the handler has taken the response.
type codec struct{}

// frame is a message received, as a buffer of gRPC's pool.
type frame struct{ buf mem.Buffer }

// Name is protobuf's: the messages on the wire are protobuf's.
func (codec) Name() string { return "proto" }

func (codec) Marshal(v any) (mem.BufferSlice, error) {
	m, ok := v.(proto.Message)
	if !ok {
		return nil, fmt.Errorf("xDS stream: cannot marshal a %T", v)
	}
	b, err := proto.Marshal(m)
	if err != nil {
		return nil, err
	}
	return mem.BufferSlice{mem.SliceBuffer(b)}, nil
}

func (codec) Unmarshal(data mem.BufferSlice, v any) error {
	f, ok := v.(*frame)
	if !ok {
		return fmt.Errorf("xDS stream: cannot unmarshal into a %T", v)
	}
	// data is freed once Unmarshal returns: this keeps a reference to its
	// buffer (or to a copy in one buffer, if it came in several).
	f.buf = data.MaterializeToBuffer(mem.DefaultBufferPool())
	return nil
}

// Field numbers of the messages read here (envoy.service.discovery.v3).
const (
	fieldVersion      = 1 // DiscoveryResponse.version_info, DeltaDiscoveryResponse.system_version_info
	fieldResources    = 2
	fieldTypeURL      = 4
	fieldNonce        = 5
	fieldRemoved      = 6 // DeltaDiscoveryResponse.removed_resources
	fieldErrors       = 7 // DiscoveryResponse.resource_errors
	fieldDeltaErrors  = 9 // DeltaDiscoveryResponse.resource_errors
	fieldAnyTypeURL   = 1
	fieldAnyValue     = 2
	fieldResourceVer  = 1 // Resource.version
	fieldResourceAny  = 2 // Resource.resource
	fieldResourceName = 3 // Resource.name
)

// errMalformed is the error of a message that is not valid wire format.
var errMalformed = wire.ErrMalformed

// ParseSotW reads a DiscoveryResponse. It fails where protobuf would on
// the fields it reads (a malformed field, a string that is not UTF-8),
// and is no stricter than protobuf on the others.
func ParseSotW(b []byte) (*Update, error) { return parseSotW(b, nil) }

// parseSotW is ParseSotW, with the resources in reuse when it has room.
func parseSotW(b []byte, reuse []Resource) (*Update, error) {
	u := &Update{}
	n := 0
	err := envelope(b, u, fieldErrors, func(num protowire.Number, v []byte) error {
		if num == fieldResources {
			n++
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("DiscoveryResponse: %w", err)
	}
	// The resources are read once the type URL is known, which may come
	// after them: a second walk of the fields, already checked, so that
	// the only allocation is the resources'.
	if cap(reuse) >= n {
		u.Resources = reuse[:n]
	} else {
		u.Resources = make([]Resource, n)
	}
	i := 0
	err = wire.BytesFields(b, func(num protowire.Number, a []byte) error {
		if num != fieldResources {
			return nil
		}
		if value, ok := plainAny(a, u.TypeURL); ok {
			u.Resources[i].Value = value
		} else if r, err := readAny(a, u.TypeURL); err != nil {
			return fmt.Errorf("resources[%d]: %w", i, err)
		} else {
			u.Resources[i] = r
		}
		i++
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("DiscoveryResponse: %w", err)
	}
	return u, nil
}

// plainAny reads b as an Any of type typeURL in the form encoders write
// (the type URL, then the value, each once), and returns its value; ok is
// false for any other Any, which readAny reads. It is readAny's answer for
// the Anys of a large response, at a fraction of its cost.
func plainAny(b []byte, typeURL string) (value []byte, ok bool) {
	num, typ, n := protowire.ConsumeTag(b)
	if n < 0 || num != fieldAnyTypeURL || typ != protowire.BytesType {
		return nil, false
	}
	b = b[n:]
	url, n := protowire.ConsumeBytes(b)
	if n < 0 || string(url) != typeURL {
		return nil, false
	}
	b = b[n:]
	if len(b) == 0 {
		return nil, true // no value: an empty resource, as readAny reads it
	}
	if num, typ, n = protowire.ConsumeTag(b); n < 0 || num != fieldAnyValue || typ != protowire.BytesType {
		return nil, false
	}
	b = b[n:]
	if value, n = protowire.ConsumeBytes(b); n < 0 || n != len(b) {
		return nil, false
	}
	return value, true
}

// ParseDelta reads a DeltaDiscoveryResponse, as ParseSotW does a
// DiscoveryResponse.
func ParseDelta(b []byte) (*Update, error) { return parseDelta(b, nil) }

// parseDelta is ParseDelta, with the resources in reuse when it has room.
func parseDelta(b []byte, reuse []Resource) (*Update, error) {
	u := &Update{Delta: true}
	var res [][]byte
	err := envelope(b, u, fieldDeltaErrors, func(num protowire.Number, v []byte) error {
		switch num {
		case fieldResources:
			res = append(res, v)
		case fieldRemoved:
			var name string
			if err := str(v, &name); err != nil {
				return err
			}
			u.Removed = append(u.Removed, xdstp.Received(name))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("DeltaDiscoveryResponse: %w", err)
	}
	if cap(reuse) >= len(res) {
		u.Resources = reuse[:0]
	} else {
		u.Resources = make([]Resource, 0, len(res))
	}
	for i, b := range res {
		r, ok, err := readDeltaResource(b, u.TypeURL)
		if err != nil {
			return nil, fmt.Errorf("DeltaDiscoveryResponse: resources[%d]: %w", i, err)
		}
		if ok {
			u.Resources = append(u.Resources, r)
		}
	}
	return u, nil
}

// envelope reads the fields both kinds of response have into u (their
// resource_errors are field errs) and hands the others to more.
func envelope(b []byte, u *Update, errs protowire.Number, more func(num protowire.Number, v []byte) error) error {
	var res []*discoveryv3.ResourceError
	err := wire.BytesFields(b, func(num protowire.Number, v []byte) error {
		switch num {
		case fieldVersion:
			return str(v, &u.Version)
		case fieldTypeURL:
			return str(v, &u.TypeURL)
		case fieldNonce:
			return str(v, &u.Nonce)
		case errs:
			re := &discoveryv3.ResourceError{}
			if err := proto.Unmarshal(v, re); err != nil {
				return err
			}
			res = append(res, re)
			return nil
		}
		return more(num, v)
	})
	u.Errors = resourceErrors(res)
	u.ShownVersion = xerr.Bound(u.Version)
	return err
}

// readAny reads one resource of a State of the World response, an Any of
// the response's type, or an envoy.service.discovery.v3.Resource that
// wraps one.
func readAny(b []byte, typeURL string) (Resource, error) {
	url, value, err := anyOf(b)
	if err != nil {
		return Resource{}, err
	}
	if string(url) == ResourceWrapperURL {
		w := &discoveryv3.Resource{}
		if err := proto.Unmarshal(value, w); err != nil {
			return Resource{Err: fmt.Errorf("cannot unmarshal %s: %v", ResourceWrapperURL, err)}, nil
		}
		if w.GetResource() == nil {
			return Resource{Name: xdstp.Received(w.GetName()), Err: fmt.Errorf("resource wrapper %q carries no resource", w.GetName())}, nil
		}
		return check(Resource{Name: xdstp.Received(w.GetName()), Value: w.GetResource().GetValue()}, []byte(w.GetResource().GetTypeUrl()), typeURL), nil
	}
	return check(Resource{Value: value}, url, typeURL), nil
}

// readDeltaResource reads one resource of a delta response; ok is false
// for a heartbeat, which carries no resource (this client has no
// resource TTLs).
func readDeltaResource(b []byte, typeURL string) (r Resource, ok bool, err error) {
	var body []byte
	err = wire.BytesFields(b, func(num protowire.Number, v []byte) error {
		switch num {
		case fieldResourceVer:
			return str(v, &r.Version)
		case fieldResourceName:
			return str(v, &r.Name)
		case fieldResourceAny:
			if ok { // a message field given twice is merged: read as one
				body = append(append([]byte(nil), body...), v...)
			} else {
				body, ok = v, true
			}
		}
		return nil
	})
	if err != nil || !ok {
		return Resource{}, false, err
	}
	r.ShownVersion = xerr.Bound(r.Version)
	url, value, err := anyOf(body)
	if err != nil {
		return Resource{}, false, err
	}
	r.Name, r.Value = xdstp.Received(r.Name), value
	return check(r, url, typeURL), true, nil
}

// anyOf reads an Any: its type URL, which must be UTF-8, and its value.
func anyOf(b []byte) (url, value []byte, err error) {
	err = wire.BytesFields(b, func(num protowire.Number, v []byte) error {
		switch num {
		case fieldAnyTypeURL:
			if !utf8.Valid(v) {
				return errMalformed
			}
			url = v
		case fieldAnyValue:
			value = v
		}
		return nil
	})
	return url, value, err
}

// check checks that r, whose type URL is url, is of the response's type.
func check(r Resource, url []byte, typeURL string) Resource {
	if string(url) != typeURL {
		return Resource{Name: r.Name, Err: fmt.Errorf("resource of type %q in a response of type %q", url, typeURL)}
	}
	return r
}

// str sets *s to v, a string field, which must be UTF-8.
func str(v []byte, s *string) error {
	if !utf8.Valid(v) {
		return errMalformed
	}
	*s = string(v)
	return nil
}
