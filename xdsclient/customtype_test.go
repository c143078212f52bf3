package xdsclient_test

import (
	"errors"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdslens/xdslens/internal/xdstest"
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
