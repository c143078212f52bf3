package xdsconfig_test

import (
	"testing"

	"github.com/xdslens/xdslens/xdsclient/xdsresource/routeconfig"

	"github.com/xdslens/xdslens/xdsclient/xdsconfig"
)

func TestMatchDomain(t *testing.T) {
	for _, tc := range []struct {
		pattern, host string
		want          bool
	}{
		{"foo.com", "foo.com", true},
		{"foo.com", "FOO.Com", true},
		{"FOO.com", "foo.com", true},
		{"foo.com", "foo.co", false},
		{"foo.com", "xfoo.com", false},
		{"*.foo.com", "a.foo.com", true},
		{"*.foo.com", "A.FOO.COM", true},
		{"*.foo.com", "a.b.foo.com", true},
		{"*.foo.com", "foo.com", false},
		{"*.foo.com", ".foo.com", false}, // the wildcard stands for at least one character
		{"*foo.com", "xfoo.com", true},
		{"*foo.com", "foo.com", false},
		{"foo.*", "foo.bar", true},
		{"foo.*", "FOO.bar:8080", true},
		{"foo.*", "foo.", false},
		{"foo.*", "bar.foo", false},
		{"*", "anything", true},
		{"*", "", true},
		{"", "", false},
		{"f*o", "foo", false}, // a wildcard in the middle is invalid
		{"**", "foo", false},  // a suffix wildcard: the second "*" stands for itself
		{"**", "a*", true},
		{"**", "*", false},
		{"*.foo.*", "a.foo.b", false},
		{"*.foo.*", "a.foo.*", true},
		{"a*b*", "a*bc", true}, // a prefix wildcard
		{"a*b*", "axbc", false},
		{"k.com", "\u212a.com", false}, // ASCII folding only: the Kelvin sign is not "k"
	} {
		if got := xdsconfig.MatchDomain(tc.pattern, tc.host); got != tc.want {
			t.Errorf("MatchDomain(%q, %q) = %v, want %v", tc.pattern, tc.host, got, tc.want)
		}
	}
}

func vhosts(domains ...[]string) []routeconfig.VirtualHost {
	var vhs []routeconfig.VirtualHost
	for _, d := range domains {
		vhs = append(vhs, routeconfig.VirtualHost{Domains: d})
	}
	return vhs
}

func TestFindVirtualHost(t *testing.T) {
	for _, tc := range []struct {
		name      string
		vhosts    []routeconfig.VirtualHost
		authority string
		want      int
	}{
		{"exact beats every wildcard", vhosts([]string{"*"}, []string{"foo.*"}, []string{"*.com"}, []string{"a.com"}), "a.com", 3},
		{"suffix beats prefix", vhosts([]string{"a.*"}, []string{"*.com"}), "a.com", 1},
		{"prefix beats any", vhosts([]string{"*"}, []string{"a.*"}), "a.com", 1},
		{"any when nothing else matches", vhosts([]string{"b.com"}, []string{"*"}), "a.com", 1},
		{"longest suffix", vhosts([]string{"*.com"}, []string{"*.b.com"}, []string{"*b.com"}), "a.b.com", 1},
		{"longest prefix", vhosts([]string{"a.*"}, []string{"a.b.*"}), "a.b.com", 1},
		{"first of equals", vhosts([]string{"*.com"}, []string{"*.org", "*.com"}), "a.com", 0},
		{"first exact of equals", vhosts([]string{"x.org"}, []string{"A.com"}, []string{"a.com"}), "a.COM", 1},
		{"domains of one host", vhosts([]string{"b.com", "*.a.com"}, []string{"*.com"}), "x.a.com", 0},
		{"no match", vhosts([]string{"b.com"}, []string{"*.org"}), "a.com", -1},
		{"no hosts", nil, "a.com", -1},
		{"with port", vhosts([]string{"a.com"}, []string{"a.com:443"}), "a.com:443", 1},
		{"invalid pattern ignored", vhosts([]string{"a*m"}, []string{"*"}), "a.com", 1},
		{"inner star of a suffix pattern stands for itself", vhosts([]string{"*"}, []string{"**"}), "a*", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := xdsconfig.FindVirtualHost(tc.vhosts, tc.authority); got != tc.want {
				t.Errorf("FindVirtualHost(%q) = %d, want %d", tc.authority, got, tc.want)
			}
		})
	}
}
