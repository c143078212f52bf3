package rbac

import "testing"

// TestCanonicalPath: the forms gRPC C-core canonicalizes before its
// url_path matchers see a path, so that a non-canonical path cannot step
// past a DENY rule written for the canonical one.
func TestCanonicalPath(t *testing.T) {
	for raw, want := range map[string]string{ // "!" for no path a matcher may match
		"/pkg.Svc/Method":          "/pkg.Svc/Method",
		"/":                        "/",
		"pkg.Svc/Method":           "/pkg.Svc/Method",
		"//pkg.Svc//Method":        "/pkg.Svc/Method",
		"/pkg.Svc/Method/":         "/pkg.Svc/Method",
		"/./pkg.Svc/./Method":      "/pkg.Svc/Method",
		"/x/../pkg.Svc/Method":     "/pkg.Svc/Method",
		"/x/y/../../pkg.Svc/M":     "/pkg.Svc/M",
		"/%70kg.Svc/Method":        "/pkg.Svc/Method",
		"/pkg.Svc%2FMethod":        "/pkg.Svc/Method",
		"/x%2F..%2Fpkg.Svc/Method": "/pkg.Svc/Method",
		"/%2570kg.Svc/Method":      "/%70kg.Svc/Method", // decoded once
		"/pkg%zz.Svc/Method":       "/pkg%zz.Svc/Method",
		"/pkg.Svc/Method%":         "/pkg.Svc/Method%",
		"/pkg.Svc/Method%4":        "/pkg.Svc/Method%4",
		"/pkg.Svc/Method?x=1":      "/pkg.Svc/Method?x=1", // no query string to strip in gRPC
		"/..":                      "!",
		"/pkg/../../x":             "!",
		"":                         "!",
		"/.":                       "/",
	} {
		got, ok := canonicalPath(raw)
		if !ok {
			got = "!"
		}
		if got != want {
			t.Errorf("canonicalPath(%q) = %q, want %q", raw, got, want)
		}
	}
}

// A canonical path is matched as it is, without an allocation.
func TestCanonicalPathAllocations(t *testing.T) {
	if n := testing.AllocsPerRun(100, func() {
		if p, ok := canonicalPath("/grpc.testing.TestService/EmptyCall"); !ok || p == "" {
			t.Fatal("not canonical")
		}
	}); n != 0 {
		t.Errorf("%v allocations, want 0", n)
	}
}
