package rbac

import (
	"context"
	"encoding/base64"
	"net/netip"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"go.uber.org/goleak"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/xdslens/xdslens/internal/testing/testmain"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, goleak.Cleanup(testmain.Exit)) }

func TestStringMatcher(t *testing.T) {
	for _, tc := range []struct {
		name string
		m    *matcherv3.StringMatcher
		in   string
		want bool
	}{
		{"exact", &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Exact{Exact: "Abc"}}, "Abc", true},
		{"exact case", &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Exact{Exact: "Abc"}}, "abc", false},
		{"exact fold", &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Exact{Exact: "Abc"}, IgnoreCase: true}, "aBC", true},
		{"exact fold longer", &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Exact{Exact: "Abc"}, IgnoreCase: true}, "aBCd", false},
		{"prefix", &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Prefix{Prefix: "/pkg."}}, "/pkg.S/M", true},
		{"prefix fold", &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Prefix{Prefix: "/PKG."}, IgnoreCase: true}, "/pkg.S/M", true},
		{"prefix fold short", &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Prefix{Prefix: "/PKG."}, IgnoreCase: true}, "/pk", false},
		{"suffix", &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Suffix{Suffix: "/M"}}, "/pkg.S/M", true},
		{"suffix fold", &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Suffix{Suffix: "/m"}, IgnoreCase: true}, "/pkg.S/M", true},
		{"suffix miss", &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Suffix{Suffix: "/m"}}, "/pkg.S/M", false},
		{"contains", &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Contains{Contains: ".S/"}}, "/pkg.S/M", true},
		{"contains fold", &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Contains{Contains: ".s/"}, IgnoreCase: true}, "/pkg.S/M", true},
		{"contains fold at end", &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Contains{Contains: "s/m"}, IgnoreCase: true}, "/pkg.S/M", true},
		{"contains fold miss", &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Contains{Contains: "s/x"}, IgnoreCase: true}, "/pkg.S/M", false},
		// ignore_case folds ASCII letters only, as C-core: a non-ASCII
		// letter matches itself, and only itself.
		{"exact fold non-ASCII", &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Exact{Exact: "CAFÉ"}, IgnoreCase: true}, "cafÉ", true},
		{"exact fold non-ASCII other case", &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Exact{Exact: "CAFÉ"}, IgnoreCase: true}, "café", false},
		{"prefix fold Kelvin sign", &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Prefix{Prefix: "k"}, IgnoreCase: true}, "\u212a", false},
		{"contains fold non-ASCII", &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Contains{Contains: "É/"}, IgnoreCase: true}, "/pkg.É/M", true},
		{"regex whole value", &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_SafeRegex{SafeRegex: &matcherv3.RegexMatcher{Regex: "pkg"}}}, "/pkg.S/M", false},
		{"regex", &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_SafeRegex{SafeRegex: &matcherv3.RegexMatcher{Regex: "/pkg\\..*"}}}, "/pkg.S/M", true},
		// ignore_case does not apply to safe_regex (Envoy, gRFC A41).
		{"regex no fold", &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_SafeRegex{SafeRegex: &matcherv3.RegexMatcher{Regex: "/PKG\\..*"}}, IgnoreCase: true}, "/pkg.S/M", false},
		// Empty values are valid, as in C-core: an empty prefix, suffix
		// or contains matches every value, an empty exact only "".
		{"empty prefix", &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Prefix{}}, "/pkg.S/M", true},
		{"empty suffix", &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Suffix{}, IgnoreCase: true}, "", true},
		{"empty contains", &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Contains{}}, "x", true},
		{"empty exact", &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Exact{}}, "x", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := compileString(tc.m)
			if err != nil {
				t.Fatal(err)
			}
			if got := s.Match(tc.in); got != tc.want {
				t.Errorf("Match(%q) = %v, want %v", tc.in, got, tc.want)
			}
		})
	}
}

func TestHeaderMatcher(t *testing.T) {
	ctx := metadata.NewIncomingContext(context.Background(), metadata.MD{
		":authority": {"svc.example.com"},
		"x-one":      {"a"},
		"x-two":      {"a", "b"},
		"x-n":        {"42"},
		"x-id-bin":   {"\x00\xff", "\x01"},
	})
	exact := func(name, v string) *routev3.HeaderMatcher {
		return &routev3.HeaderMatcher{Name: name, HeaderMatchSpecifier: &routev3.HeaderMatcher_ExactMatch{ExactMatch: v}}
	}
	rng := func(name string, start, end int64) *routev3.HeaderMatcher {
		return &routev3.HeaderMatcher{Name: name, HeaderMatchSpecifier: &routev3.HeaderMatcher_RangeMatch{RangeMatch: &typev3.Int64Range{Start: start, End: end}}}
	}
	present := func(name string, p, invert bool) *routev3.HeaderMatcher {
		return &routev3.HeaderMatcher{Name: name, InvertMatch: invert, HeaderMatchSpecifier: &routev3.HeaderMatcher_PresentMatch{PresentMatch: p}}
	}
	inverted := func(h *routev3.HeaderMatcher) *routev3.HeaderMatcher { h.InvertMatch = true; return h }
	bin := base64.RawStdEncoding.EncodeToString([]byte("\x00\xff")) + "," + base64.RawStdEncoding.EncodeToString([]byte("\x01"))
	for _, tc := range []struct {
		name string
		h    *routev3.HeaderMatcher
		want bool
	}{
		{"single value", exact("x-one", "a"), true},
		{"name in upper case", exact("X-One", "a"), true},
		{"values joined", exact("x-two", "a,b"), true},
		{"one of joined values", exact("x-two", "a"), false},
		{"binary values in base64", exact("x-id-bin", bin), true},
		{"host is the authority", exact("host", "svc.example.com"), true},
		{"path is the method", exact(":path", "/pkg.S/M"), true},
		{"method is POST", exact(":method", "POST"), true},
		{"te is never seen", present("te", true, false), false},
		{"absent", exact("x-none", ""), false},
		{"absent inverted", inverted(exact("x-none", "a")), false},
		{"inverted", inverted(exact("x-one", "b")), true},
		{"present", present("x-one", true, false), true},
		{"present false of absent", present("x-none", false, false), true},
		{"present inverted", present("x-one", true, true), false},
		{"range start", rng("x-n", 42, 43), true},
		{"range end excluded", rng("x-n", 40, 42), false},
		{"range of text", rng("x-one", 0, 100), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, err := compileHeader(tc.h)
			if err != nil {
				t.Fatal(err)
			}
			r := &Request{Ctx: ctx, Method: "/pkg.S/M"}
			if got := n.match(r); got != tc.want {
				t.Errorf("match = %v, want %v", got, tc.want)
			}
			// A second look reads the remembered value.
			if got := n.match(r); got != tc.want {
				t.Errorf("second match = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestHeaderCacheOverflow checks that a request reading more headers than
// it remembers still sees each one right.
func TestHeaderCacheOverflow(t *testing.T) {
	md := metadata.MD{}
	names := []string{"h0", "h1", "h2", "h3", "h4", "h5"}
	for _, n := range names {
		md[n] = []string{"v-" + n}
	}
	r := &Request{Ctx: metadata.NewIncomingContext(context.Background(), md)}
	for round := 0; round < 2; round++ {
		for _, n := range names {
			if v, ok := r.header(n); !ok || v != "v-"+n {
				t.Errorf("round %d: header(%q) = %q, %v; want %q, true", round, n, v, ok, "v-"+n)
			}
		}
	}
	if _, ok := r.header("h6"); ok {
		t.Error("header(h6) is present, want absent")
	}
}

func TestCIDR(t *testing.T) {
	cidr := func(addr string, bits uint32) *corev3.CidrRange {
		return &corev3.CidrRange{AddressPrefix: addr, PrefixLen: wrapperspb.UInt32(bits)}
	}
	r := &Request{
		Local:  netip.MustParseAddrPort("10.0.0.1:8443"),
		Remote: netip.MustParseAddrPort("192.168.1.7:50000"),
	}
	for _, tc := range []struct {
		name  string
		r     *corev3.CidrRange
		local bool
		want  bool
	}{
		{"remote in range", cidr("192.168.0.0", 16), false, true},
		{"remote out of range", cidr("192.168.2.0", 24), false, false},
		{"host bits ignored", cidr("192.168.1.255", 24), false, true},
		{"local in range", cidr("10.0.0.0", 8), true, true},
		{"local is not remote", cidr("10.0.0.0", 8), false, false},
		{"zero bits", cidr("0.0.0.0", 0), false, true},
		{"IPv6 range, IPv4 peer", cidr("::", 0), false, false},
		{"IPv4-mapped range holds the IPv4 peer", cidr("::ffff:192.168.0.0", 112), false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, err := compileCIDR(tc.r, tc.local, "x")
			if err != nil {
				t.Fatal(err)
			}
			if got := n.match(r); got != tc.want {
				t.Errorf("match = %v, want %v", got, tc.want)
			}
		})
	}
	if n, err := compileCIDR(cidr("10.0.0.0", 8), false, "x"); err != nil || n.match(&Request{}) {
		t.Errorf("a request without a peer address matches a remote range (err %v)", err)
	}
	for _, bad := range []*corev3.CidrRange{cidr("10.0.0.0", 33), cidr("fe80::1%eth0", 64), cidr("host", 8)} {
		if _, err := compileCIDR(bad, false, "x"); err == nil {
			t.Errorf("compileCIDR(%v) succeeded, want an error", bad)
		}
	}
}
