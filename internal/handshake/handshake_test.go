package handshake_test

import (
	"strings"
	"testing"

	"github.com/xdslens/xdslens/xdsclient/xdsresource/matcher"
	"github.com/xdslens/xdslens/xdsclient/xdsresource/security"

	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/resolver"

	"github.com/xdslens/xdslens/internal/certsan"
	"github.com/xdslens/xdslens/internal/certstore"
	"github.com/xdslens/xdslens/internal/handshake"
	"github.com/xdslens/xdslens/xdsclient/bootstrap"
)

func TestSetGetEqual(t *testing.T) {
	store := certstore.New(&bootstrap.Config{})
	defer store.Close()
	info := func(hostname string) *handshake.Info {
		return &handshake.Info{Cluster: "c", Settings: settings(t, &security.Config{RootInstance: "roots"}), Store: store, Hostname: hostname}
	}
	addr := handshake.Set(resolver.Address{Addr: "127.0.0.1:1"}, info("a.example.com"))
	if got := handshake.Get(addr.Attributes); !got.Equal(info("a.example.com")) {
		t.Errorf("Get = %+v, want the Info set", got)
	}
	if got := handshake.Get(resolver.Address{}.Attributes); got != nil {
		t.Errorf("Get of an address without attributes = %+v, want nil", got)
	}
	for _, tc := range []struct {
		name string
		o    any
		want bool
	}{
		{"same settings", info("a.example.com"), true},
		{"another hostname", info("b.example.com"), false},
		{"another cluster", &handshake.Info{Cluster: "d", Settings: info("").Settings, Store: store, Hostname: "a.example.com"}, false},
		{"other settings", &handshake.Info{Cluster: "c", Settings: settings(t, &security.Config{RootInstance: "other"}), Store: store, Hostname: "a.example.com"}, false},
		{"other SAN matchers", &handshake.Info{Cluster: "c", Settings: settings(t, &security.Config{RootInstance: "roots", SANMatchers: []matcher.String{{Kind: matcher.Regex, Value: "a.*"}}}), Store: store, Hostname: "a.example.com"}, false},
		{"nil Info", (*handshake.Info)(nil), false},
		{"another type", "c", false},
	} {
		if got := info("a.example.com").Equal(tc.o); got != tc.want {
			t.Errorf("%s: Equal = %v, want %v", tc.name, got, tc.want)
		}
	}
	if !(*handshake.Info)(nil).Equal((*handshake.Info)(nil)) {
		t.Error("two nil Infos differ")
	}
	// A change of hostname alone makes addresses differ, so a channel
	// reconnects with the new server name.
	a1 := handshake.Set(resolver.Address{Addr: "127.0.0.1:1"}, info("a.example.com"))
	a2 := handshake.Set(resolver.Address{Addr: "127.0.0.1:1"}, info("b.example.com"))
	if a1.Equal(a2) {
		t.Error("addresses whose Infos differ in hostname are equal")
	}
	if handshake.Applies(insecure.NewCredentials()) {
		t.Error("insecure credentials apply cluster security")
	}
}

// settings returns the Settings of sc.
func settings(t *testing.T, sc *security.Config) *handshake.Settings {
	t.Helper()
	s, err := handshake.NewSettings(sc)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestNewSettings: the SAN matchers are compiled from the config given,
// each config its own; a config that cannot be compiled is refused,
// naming the matcher.
func TestNewSettings(t *testing.T) {
	sans := certsan.SANs{URI: []string{"spiffe://example.org/ns/prod/sa/api"}}
	regex := func(expr string) *security.Config {
		return &security.Config{RootInstance: "roots", SANMatchers: []matcher.String{{Kind: matcher.Regex, Value: expr}}}
	}
	prod, dev := regex(`spiffe://example\.org/ns/prod/sa/[a-z]+`), regex(`spiffe://example\.org/ns/dev/sa/[a-z]+`)
	ps, ds := settings(t, prod), settings(t, dev)
	if ps.Security() != prod || ds.Security() != dev {
		t.Errorf("Security() = %p, %p; want the configs given, %p, %p", ps.Security(), ds.Security(), prod, dev)
	}
	if err := ps.SANs().Check(sans); err != nil {
		t.Errorf("the prod matcher: %v, want a match", err)
	}
	if err := ds.SANs().Check(sans); err == nil || !strings.Contains(err.Error(), "/ns/dev/") {
		t.Errorf("the dev matcher: %v, want no match, naming its expression", err)
	}
	if got := (*handshake.Settings)(nil).Security(); got != nil {
		t.Errorf("nil Settings: Security() = %v, want nil", got)
	}
	if _, err := handshake.NewSettings(nil); err == nil {
		t.Error("NewSettings(nil) succeeded")
	}
	bad := regex("ok")
	bad.SANMatchers = append(bad.SANMatchers, matcher.String{Kind: matcher.Regex, Value: "a)|(b"})
	if _, err := handshake.NewSettings(bad); err == nil || !strings.Contains(err.Error(), `match_subject_alt_names[1]: safe_regex "a)|(b"`) {
		t.Errorf("NewSettings of an invalid regex: %v, want an error naming match_subject_alt_names[1]", err)
	}
}
