package xdsclient_test

import (
	"errors"
	"sync/atomic"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdslens/xdslens/internal/testing/xdstest"
	"github.com/xdslens/xdslens/xdsclient"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
)

// extensionType is a resource type defined outside the library: extension
// configs whose typed_config must be set.
type extensionType struct{}

const extensionURL = xdsresource.TypeURLPrefix + "envoy.config.core.v3.TypedExtensionConfig"

func (extensionType) TypeURL() string   { return extensionURL }
func (extensionType) ShortName() string { return "" }
func (extensionType) FullState() bool   { return false }
func (extensionType) Decode(_ xdsresource.DecodeOptions, a *anypb.Any) (string, any, error) {
	m := &corev3.TypedExtensionConfig{}
	if err := a.UnmarshalTo(m); err != nil {
		return "", nil, err
	}
	if m.GetTypedConfig() == nil {
		return m.GetName(), nil, errors.New("extension " + m.GetName() + ": typed_config missing")
	}
	return m.GetName(), m, nil
}

func TestCustomResourceType(t *testing.T) {
	f := newFixture(t, nil)
	good, bad := xdstest.NewWatcher(), xdstest.NewWatcher()
	defer f.c.Watch(extensionType{}, "ext-good", good)()
	defer f.c.Watch(extensionType{}, "ext-bad", bad)()
	st := f.NextStream()
	req := f.RecvType(st, extensionURL)
	for len(req.GetResourceNames()) < 2 {
		req = f.RecvType(st, extensionURL)
	}
	cfg, _ := anypb.New(&corev3.Node{Id: "payload"})
	f.send(st, extensionURL, "1",
		&corev3.TypedExtensionConfig{Name: "ext-good", TypedConfig: cfg},
		&corev3.TypedExtensionConfig{Name: "ext-bad"})
	e := good.Expect(t, xdsclient.NotifyResource, 0)
	if e.Resource.Value.(*corev3.TypedExtensionConfig).GetTypedConfig() == nil {
		t.Error("custom value not delivered")
	}
	b := bad.Expect(t, xdsclient.NotifyResourceError, codes.InvalidArgument)
	if !contains(b.Err, "typed_config missing") || !contains(b.Err, extensionURL) {
		t.Errorf("custom type error %v does not carry the rule or name the type", b.Err)
	}
	if nack := f.RecvType(st, extensionURL); nack.GetErrorDetail() == nil {
		t.Error("invalid custom resource not NACKed")
	}
}

// countingType is extensionType counting its decodes; with names set it
// also reads names without decoding (xdsresource.NameReader).
type countingType struct {
	extensionType
	decodes *atomic.Int64
}

func (t countingType) Decode(opts xdsresource.DecodeOptions, a *anypb.Any) (string, any, error) {
	t.decodes.Add(1)
	return t.extensionType.Decode(opts, a)
}

type namingCountingType struct{ countingType }

func (namingCountingType) ReadName(b []byte) ([]byte, bool) { return xdsresource.ReadStringField(b, 1) }

// A resource whose bytes did not change is neither decoded again (when the
// type reads names without decoding) nor delivered again (either way); a
// watcher that joins later gets the held bytes decoded afresh, equal to
// what the first watcher got.
func TestUnchangedResourceOfCustomType(t *testing.T) {
	for _, tc := range []struct {
		desc          string
		naming        bool
		decodesBefore int64 // decodes once the same bytes came twice
	}{
		{"NameReader", true, 1},
		{"no NameReader", false, 2},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			var n atomic.Int64
			var typ xdsresource.Type = countingType{decodes: &n}
			if tc.naming {
				typ = namingCountingType{countingType{decodes: &n}}
			}
			f := newFixture(t, nil)
			first := xdstest.NewWatcher()
			defer f.c.Watch(typ, "ext", first)()
			st := f.NextStream()
			f.RecvType(st, extensionURL)
			cfg, _ := anypb.New(&corev3.Node{Id: "payload"})
			res := &corev3.TypedExtensionConfig{Name: "ext", TypedConfig: cfg}
			f.send(st, extensionURL, "1", res)
			got := first.Expect(t, xdsclient.NotifyResource, 0)
			f.RecvType(st, extensionURL) // ACK of 1
			f.send(st, extensionURL, "2", res)
			if ack := f.RecvType(st, extensionURL); ack.GetVersionInfo() != "2" || ack.GetErrorDetail() != nil {
				t.Fatalf("same bytes at version 2: request %v, want an ACK of 2", ack)
			}
			if d := n.Load(); d != tc.decodesBefore {
				t.Errorf("decodes after the same bytes came twice = %d, want %d", d, tc.decodesBefore)
			}

			second := xdstest.NewWatcher()
			defer f.c.Watch(typ, "ext", second)()
			late := second.Expect(t, xdsclient.NotifyResource, 0)
			// Callbacks run in order: anything for the first watcher from
			// version 2 would have come before the second watcher's.
			first.ExpectNone(t)
			if d := n.Load(); d != tc.decodesBefore+1 {
				t.Errorf("decodes after a late watcher = %d, want %d", d, tc.decodesBefore+1)
			}
			if !proto.Equal(late.Resource.Value.(proto.Message), got.Resource.Value.(proto.Message)) {
				t.Errorf("late watcher got %v, first got %v", late.Resource.Value, got.Resource.Value)
			}
			if late.Resource.Version != "2" || got.Resource.Version != "1" {
				t.Errorf("versions: late watcher %q (want 2), first %q (want 1)", late.Resource.Version, got.Resource.Version)
			}
		})
	}
}

// An xdstp:// name whose context parameters are not in canonical order is
// still recognised, before decoding, when its bytes come again.
func TestUnchangedXdstpNameNotDecodedAgain(t *testing.T) {
	var n atomic.Int64
	typ := namingCountingType{countingType{decodes: &n}}
	m := newMultiFixture(t, 1, func([]string) string { return `{"a": {}}` })
	name := "xdstp://a/envoy.config.core.v3.TypedExtensionConfig/ext?b=2&a=1"
	rec := xdstest.NewWatcher()
	defer m.c.Watch(typ, name, rec)()
	st := m.streamOn(0)
	m.RecvType(st, extensionURL)
	cfg, _ := anypb.New(&corev3.Node{Id: "payload"})
	res := &corev3.TypedExtensionConfig{Name: name, TypedConfig: cfg}
	m.send(st, extensionURL, "1", res)
	rec.Expect(t, xdsclient.NotifyResource, 0)
	m.RecvType(st, extensionURL) // ACK of 1
	m.send(st, extensionURL, "2", res)
	if ack := m.RecvType(st, extensionURL); ack.GetVersionInfo() != "2" || ack.GetErrorDetail() != nil {
		t.Fatalf("same bytes at version 2: request %v, want an ACK of 2", ack)
	}
	if d := n.Load(); d != 1 {
		t.Errorf("decodes after the same bytes came twice = %d, want 1", d)
	}
}
