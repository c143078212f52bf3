package filterconfig_test

import (
	"slices"
	"testing"

	rbacconfigv3 "github.com/envoyproxy/go-control-plane/envoy/config/rbac/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	faultv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/fault/v3"
	rbacv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/rbac/v3"
	routerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/xdslens/xdslens/internal/testing/testmain"
	"github.com/xdslens/xdslens/xdsclient/xdsresource/filterconfig"
)

func TestMain(m *testing.M) { testmain.Run(m) }

// toAny packs m.
func toAny(t *testing.T, m proto.Message) *anypb.Any {
	t.Helper()
	a, err := anypb.New(m)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// filter is an http_filters entry.
func filter(t *testing.T, name string, cfg proto.Message, optional bool) *hcmv3.HttpFilter {
	return &hcmv3.HttpFilter{Name: name, IsOptional: optional, ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: toAny(t, cfg)}}
}

// names returns the instance names of fs.
func names(fs []filterconfig.Filter) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Name)
	}
	return out
}

// TestValidateFilters: the filters kept on each side, the router last;
// what gRPC does not run on a side is rejected there, or left out when
// optional.
func TestValidateFilters(t *testing.T) {
	router := func() *hcmv3.HttpFilter { return filter(t, "router", &routerv3.Router{}, false) }
	fault := func(optional bool) *hcmv3.HttpFilter { return filter(t, "fault", &faultv3.HTTPFault{}, optional) }
	rbac := func(optional bool) *hcmv3.HttpFilter { return filter(t, "authz", &rbacv3.RBAC{}, optional) }
	unknown := filter(t, "unknown", &durationpb.Duration{}, true)
	disabledFault := fault(false)
	disabledFault.Disabled = true
	for _, tc := range []struct {
		name    string
		filters []*hcmv3.HttpFilter
		server  bool
		want    []string
		err     string
	}{
		{"fault on a client", []*hcmv3.HttpFilter{fault(false), router()}, false, []string{"fault", "router"}, ""},
		{"RBAC on a server", []*hcmv3.HttpFilter{rbac(false), router()}, true, []string{"authz", "router"}, ""},
		{"an optional filter of the other side", []*hcmv3.HttpFilter{fault(true), rbac(true), router()}, true, []string{"authz", "router"}, ""},
		{"an unknown optional filter", []*hcmv3.HttpFilter{unknown, router()}, false, []string{"router"}, ""},
		// disabled is not read (gRPC C-core): the filter is kept and runs.
		{"a filter marked disabled", []*hcmv3.HttpFilter{disabledFault, router()}, false, []string{"fault", "router"}, ""},
		{"fault on a server", []*hcmv3.HttpFilter{fault(false), router()}, true, nil,
			`http_filters[0] "fault": filter type "` + filterconfig.FaultTypeURL + `" is not supported on servers`},
		{"RBAC on a client", []*hcmv3.HttpFilter{rbac(false), router()}, false, nil,
			`http_filters[0] "authz": filter type "` + filterconfig.RBACTypeURL + `" is not supported on clients`},
		{"no router", []*hcmv3.HttpFilter{fault(false)}, false, nil, `http_filters: last filter "fault" is not the router`},
		{"the router first", []*hcmv3.HttpFilter{router(), fault(false)}, false, nil, `http_filters[0] "router": the router must be the last filter`},
		{"a name twice", []*hcmv3.HttpFilter{router(), router()}, false, nil, `http_filters[1]: duplicate name "router"`},
		{"nothing", nil, false, nil, "http_filters is empty: the router filter is required"},
	} {
		got, err := filterconfig.ValidateFilters(tc.filters, tc.server)
		switch {
		case tc.err != "" && (err == nil || err.Error() != tc.err):
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.err)
		case tc.err == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.err == "" && !slices.Equal(names(got), tc.want):
			t.Errorf("%s: filters %q, want %q", tc.name, names(got), tc.want)
		}
	}
}

// TestValidateOverrides: overrides of understood filters are kept, a
// FilterConfig wrapper resolved, one marked disabled as any other (its
// disabled is not read, as in gRPC C-core); an optional one of a type
// nobody understands is left out.
func TestValidateOverrides(t *testing.T) {
	wrap := func(cfg proto.Message, optional, disabled bool) *anypb.Any {
		fc := &routev3.FilterConfig{IsOptional: optional, Disabled: disabled}
		if cfg != nil {
			fc.Config = toAny(t, cfg)
		}
		return toAny(t, fc)
	}
	perRoute := &rbacv3.RBACPerRoute{Rbac: &rbacv3.RBAC{Rules: &rbacconfigv3.RBAC{}}}
	got, err := filterconfig.ValidateOverrides(map[string]*anypb.Any{
		"fault":   toAny(t, &faultv3.HTTPFault{}),
		"authz":   wrap(perRoute, false, true),
		"unknown": wrap(&durationpb.Duration{}, true, false),
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got["fault"].TypeURL != filterconfig.FaultTypeURL ||
		got["authz"].TypeURL != filterconfig.RBACPerRouteTypeURL || !proto.Equal(got["authz"].Config, toAny(t, perRoute)) {
		t.Errorf("ValidateOverrides = %+v, want fault, and authz with the RBACPerRoute its FilterConfig holds", got)
	}
	if got, err := filterconfig.ValidateOverrides(nil); got != nil || err != nil {
		t.Errorf("ValidateOverrides(nil) = %v, %v; want nil, nil", got, err)
	}
	for _, tc := range []struct {
		name string
		m    map[string]*anypb.Any
		want string
	}{
		{"a FilterConfig without config", map[string]*anypb.Any{"f": wrap(nil, true, true)}, `typed_per_filter_config["f"].config: missing`},
		{"a type nobody understands", map[string]*anypb.Any{"f": toAny(t, &durationpb.Duration{})},
			`typed_per_filter_config["f"]: unsupported filter override type "type.googleapis.com/google.protobuf.Duration"`},
		{"the router, which takes no override", map[string]*anypb.Any{"r": toAny(t, &routerv3.Router{})},
			`typed_per_filter_config["r"]: the router filter takes no config override`},
		{"the router, optional", map[string]*anypb.Any{"r": wrap(&routerv3.Router{}, true, false)},
			`typed_per_filter_config["r"]: the router filter takes no config override`},
		{"an override without a filter instance name", map[string]*anypb.Any{"": toAny(t, &faultv3.HTTPFault{})},
			`typed_per_filter_config[""]: the filter instance name is empty`},
	} {
		if _, err := filterconfig.ValidateOverrides(tc.m); err == nil || err.Error() != tc.want {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}
}
