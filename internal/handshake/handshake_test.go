package handshake_test

import (
	"testing"

	"github.com/xdslens/xdslens/xdsclient/xdsresource/security"

	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/resolver"

	"github.com/xdslens/xdslens/internal/certstore"
	"github.com/xdslens/xdslens/internal/handshake"
	"github.com/xdslens/xdslens/xdsclient/bootstrap"
)

func TestSetGetEqual(t *testing.T) {
	store := certstore.New(&bootstrap.Config{})
	defer store.Close()
	info := func(hostname string) *handshake.Info {
		return &handshake.Info{Cluster: "c", Security: &security.Config{RootInstance: "roots"}, Store: store, Hostname: hostname}
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
		{"another cluster", &handshake.Info{Cluster: "d", Security: info("").Security, Store: store, Hostname: "a.example.com"}, false},
		{"other settings", &handshake.Info{Cluster: "c", Security: &security.Config{RootInstance: "other"}, Store: store, Hostname: "a.example.com"}, false},
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
