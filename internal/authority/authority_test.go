package authority

import (
	"testing"

	"github.com/xdslens/xdslens/internal/testing/testmain"
)

func TestMain(m *testing.M) { testmain.Run(m) }

// TestOfEndpoint: the bytes an authority may hold stay as they are, the
// others are percent-encoded (a "%" too), and a port alone is localhost's.
func TestOfEndpoint(t *testing.T) {
	for _, tc := range []struct{ endpoint, want string }{
		{"svc.example.com:8080", "svc.example.com:8080"},
		{"!$&'()*+,;=-._~[::1]@:", "!$&'()*+,;=-._~[::1]@:"},
		{"a b", "a%20b"},
		{"a/b%", "a%2Fb%25"},
		{"café", "caf%C3%A9"},
		{" x", "%20x"},
		{":8080", "localhost:8080"},
		{"", ""},
	} {
		if got := OfEndpoint(tc.endpoint); got != tc.want {
			t.Errorf("OfEndpoint(%q) = %q, want %q", tc.endpoint, got, tc.want)
		}
	}
}
