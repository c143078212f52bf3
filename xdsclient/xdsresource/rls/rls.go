// Package rls validates the RouteLookupClusterSpecifier plugin of a route
// configuration (gRFC A28): the route_lookup_config of gRPC's RLS
// policy, as that policy validates it, with its defaults and caps. Its
// rules are rows of the table in package xdsresource.
package rls

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"google.golang.org/grpc/resolver"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/xdslens/xdslens/xdsclient/xdsresource/internal/decoding"
)

// ClusterSpecifierTypeURL is the type URL of the one cluster
// specifier plugin that gRPC supports: RLS (gRFC A28).
const ClusterSpecifierTypeURL = decoding.TypeURLPrefix + "grpc.lookup.v1.RouteLookupClusterSpecifier"

// Limits and defaults that gRPC's RLS policy applies to a route lookup
// config.
const (
	// MaxAge caps max_age (unless stale_age is set) and stale_age.
	MaxAge = 5 * time.Minute
	// MaxCacheSizeBytes caps cache_size_bytes.
	MaxCacheSizeBytes = 5 * 1024 * 1024 * 8
	// DefaultLookupServiceTimeout replaces an unset or zero
	// lookup_service_timeout.
	DefaultLookupServiceTimeout = 10 * time.Second
)

// Config is the validated route_lookup_config of a
// RouteLookupClusterSpecifier: how the RLS policy asks a lookup service
// which cluster a request goes to. Ages and the cache size are as gRPC uses
// them, after its defaults and caps.
type Config struct {
	// KeyBuilders are grpc_keybuilders; never empty.
	KeyBuilders []KeyBuilder
	// LookupService is the target of the RLS server.
	LookupService string
	// LookupServiceTimeout is lookup_service_timeout, or
	// DefaultLookupServiceTimeout when unset or zero.
	LookupServiceTimeout time.Duration
	// MaxAge and StaleAge are max_age and stale_age. Unset, either is
	// MaxAge; StaleAge is at most MaxAge and at most MaxAge, and
	// MaxAge is at most MaxAge when stale_age is unset.
	MaxAge, StaleAge time.Duration
	// CacheSizeBytes is cache_size_bytes, at most MaxCacheSizeBytes.
	CacheSizeBytes int64
	// DefaultTarget is default_target, "" when unset.
	DefaultTarget string
}

// KeyBuilder is one GrpcKeyBuilder: the request keys to send for the
// methods it names.
type KeyBuilder struct {
	// Names are the services and methods it applies to; Method may be
	// empty, meaning every method of Service.
	Names []Method
	// Headers map request header names to keys.
	Headers []HeaderKey
	// HostKey, ServiceKey and MethodKey are extra_keys: the keys under
	// which the request's host, service and method are sent, "" for none.
	HostKey, ServiceKey, MethodKey string
	// ConstantKeys are sent with every request.
	ConstantKeys map[string]string
}

// Method is one name of a key builder: a service, never empty, and a
// method of it, empty for all of them.
type Method struct{ Service, Method string }

// HeaderKey sends the value of the first of Names present in a request
// under Key.
type HeaderKey struct {
	Key   string
	Names []string
}

// Validate decodes and validates cfg, a RouteLookupClusterSpecifier, as
// gRPC's RLS policy does. Errors start with the field path inside it.
func Validate(cfg *anypb.Any) (*Config, error) {
	spec := dynamicpb.NewMessage(lookupMessage("RouteLookupClusterSpecifier"))
	if err := proto.Unmarshal(cfg.GetValue(), spec); err != nil {
		return nil, fmt.Errorf("cannot unmarshal grpc.lookup.v1.RouteLookupClusterSpecifier: %v", err)
	}
	m := message(spec, "route_lookup_config")
	rl := &Config{}
	kbs := list(m, "grpc_keybuilders")
	if kbs.Len() == 0 {
		return nil, errors.New("route_lookup_config.grpc_keybuilders: empty")
	}
	paths := make(map[string]bool)
	for i := range kbs.Len() {
		kb, err := validateKeyBuilder(kbs.Get(i).Message(), paths)
		if err != nil {
			return nil, fmt.Errorf("route_lookup_config.grpc_keybuilders[%d].%v", i, err)
		}
		rl.KeyBuilders = append(rl.KeyBuilders, kb)
	}

	rl.LookupService = m.Get(field(m, "lookup_service")).String()
	if rl.LookupService == "" {
		return nil, errors.New("route_lookup_config.lookup_service: empty")
	}
	if !resolvableTarget(rl.LookupService) {
		return nil, fmt.Errorf("route_lookup_config.lookup_service: %q is not a target that gRPC can resolve", rl.LookupService)
	}
	var durs [3]time.Duration
	for i, name := range []protoreflect.Name{"lookup_service_timeout", "max_age", "stale_age"} {
		d, err := durationField(m, name)
		if err != nil {
			return nil, fmt.Errorf("route_lookup_config.%s: %v", name, err)
		}
		durs[i] = d
	}
	rl.LookupServiceTimeout, rl.MaxAge, rl.StaleAge = durs[0], durs[1], durs[2]
	if rl.LookupServiceTimeout == 0 {
		rl.LookupServiceTimeout = DefaultLookupServiceTimeout
	}
	maxAgeSet, staleAgeSet := rl.MaxAge != 0, rl.StaleAge != 0
	if staleAgeSet && !maxAgeSet {
		return nil, errors.New("route_lookup_config.stale_age: set without max_age")
	}
	if !maxAgeSet || (!staleAgeSet && rl.MaxAge > MaxAge) {
		rl.MaxAge = MaxAge
	}
	if !staleAgeSet || rl.StaleAge > MaxAge {
		rl.StaleAge = MaxAge
	}
	rl.StaleAge = min(rl.StaleAge, rl.MaxAge)

	rl.CacheSizeBytes = m.Get(field(m, "cache_size_bytes")).Int()
	if rl.CacheSizeBytes <= 0 {
		return nil, fmt.Errorf("route_lookup_config.cache_size_bytes: %d, must be positive", rl.CacheSizeBytes)
	}
	rl.CacheSizeBytes = min(rl.CacheSizeBytes, MaxCacheSizeBytes)
	rl.DefaultTarget = m.Get(field(m, "default_target")).String()
	return rl, nil
}

// validateKeyBuilder checks one GrpcKeyBuilder; paths holds the
// "/service/method" names of the builders before it.
func validateKeyBuilder(m protoreflect.Message, paths map[string]bool) (KeyBuilder, error) {
	var kb KeyBuilder
	seen := make(map[string]bool) // keys used so far
	consts := m.Get(field(m, "constant_keys")).Map()
	if consts.Len() != 0 {
		kb.ConstantKeys = make(map[string]string, consts.Len())
	}
	consts.Range(func(k protoreflect.MapKey, v protoreflect.Value) bool {
		kb.ConstantKeys[k.String()] = v.String()
		seen[k.String()] = true
		return true
	})
	headers := list(m, "headers")
	for i := range headers.Len() {
		h := headers.Get(i).Message()
		if h.Get(field(h, "required_match")).Bool() {
			return kb, fmt.Errorf("headers[%d].required_match: must not be set", i)
		}
		key := h.Get(field(h, "key")).String()
		if seen[key] {
			return kb, fmt.Errorf("headers[%d].key: %q is used twice", i, key)
		}
		seen[key] = true
		hk := HeaderKey{Key: key}
		names := list(h, "names")
		for j := range names.Len() {
			hk.Names = append(hk.Names, names.Get(j).String())
		}
		kb.Headers = append(kb.Headers, hk)
	}
	extra := message(m, "extra_keys")
	for _, x := range []struct {
		name protoreflect.Name
		v    *string
	}{{"host", &kb.HostKey}, {"service", &kb.ServiceKey}, {"method", &kb.MethodKey}} {
		*x.v = extra.Get(field(extra, x.name)).String()
		// As in gRPC, an unset extra key clashes with a header or
		// constant key that is empty too.
		if seen[*x.v] {
			return kb, fmt.Errorf("extra_keys.%s: %q is already a header or constant key", x.name, *x.v)
		}
	}
	names := list(m, "names")
	if names.Len() == 0 {
		return kb, errors.New("names: empty")
	}
	for i := range names.Len() {
		n := names.Get(i).Message()
		meth := Method{Service: n.Get(field(n, "service")).String(), Method: n.Get(field(n, "method")).String()}
		switch {
		case meth.Service == "":
			return kb, fmt.Errorf("names[%d].service: empty", i)
		case strings.Contains(meth.Method, "/"):
			return kb, fmt.Errorf("names[%d].method: %q contains a slash", i, meth.Method)
		}
		path := "/" + meth.Service + "/" + meth.Method
		if paths[path] {
			return kb, fmt.Errorf("names[%d]: %q is named twice", i, path)
		}
		paths[path] = true
		kb.Names = append(kb.Names, meth)
	}
	return kb, nil
}

// builtinSchemes are the resolvers that every gRPC Go program registers,
// whether or not this one has linked them yet.
var builtinSchemes = map[string]bool{"dns": true, "passthrough": true, "unix": true, "unix-abstract": true}

// resolvableTarget reports whether gRPC can resolve target: it parses as a
// URI whose scheme, or else the default scheme, is one of builtinSchemes or
// has a registered resolver.
func resolvableTarget(target string) bool {
	u, err := url.Parse(target)
	if err != nil {
		if u, err = url.Parse(resolver.GetDefaultScheme() + ":///" + target); err != nil {
			return false
		}
	}
	scheme := u.Scheme
	if scheme == "" {
		scheme = resolver.GetDefaultScheme()
	}
	return builtinSchemes[scheme] || resolver.Get(scheme) != nil
}

func field(m protoreflect.Message, name protoreflect.Name) protoreflect.FieldDescriptor {
	return m.Descriptor().Fields().ByName(name)
}

func message(m protoreflect.Message, name protoreflect.Name) protoreflect.Message {
	return m.Get(field(m, name)).Message()
}

func list(m protoreflect.Message, name protoreflect.Name) protoreflect.List {
	return m.Get(field(m, name)).List()
}

// durationField returns the google.protobuf.Duration field name of m, zero
// when unset, or an error when it is not a valid duration.
func durationField(m protoreflect.Message, name protoreflect.Name) (time.Duration, error) {
	fd := field(m, name)
	if !m.Has(fd) {
		return 0, nil
	}
	dm := m.Get(fd).Message()
	d := &durationpb.Duration{
		Seconds: dm.Get(field(dm, "seconds")).Int(),
		Nanos:   int32(dm.Get(field(dm, "nanos")).Int()),
	}
	if err := d.CheckValid(); err != nil {
		return 0, err
	}
	return d.AsDuration(), nil
}
