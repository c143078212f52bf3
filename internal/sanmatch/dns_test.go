package sanmatch

import "testing"

// TestDNSMatch: the DNS rules of an exact matcher, as C-core's
// VerifySubjectAlternativeName has them.
func TestDNSMatch(t *testing.T) {
	tests := []struct {
		san, name string
		want      bool
	}{
		{"a.example.com", "a.example.com", true},
		{"A.Example.COM", "a.example.com", true},
		{"a.example.com.", "a.example.com", true},
		{"a.example.com", "a.example.com.", true},
		{"a.example.com", "b.example.com", false},
		{"", "", false},
		{"", "a", false},
		{"a", "", false},
		{".example.com", ".example.com", false},
		{"a.example.com", ".a.example.com", false},
		{"*.example.com", "a.example.com", true},
		{"*.example.com", "A.EXAMPLE.com", true},
		{"*.example.com.", "a.example.com", true},
		{"*.example.com", "a.b.example.com", false},
		{"*.example.com", "example.com", false},
		{"*.example.com", ".example.com", false},
		{"*", "a", false},
		{"*.", "a.", false},
		{"*.com", "example.com", true}, // two labels: C-core allows it
		{"a*.example.com", "ab.example.com", false},
		{"*a.example.com", "ba.example.com", false},
		{"a.*.example.com", "a.b.example.com", false},
		{"*.*.example.com", "a.b.example.com", false},
		{"**.example.com", "a.example.com", false},
		{"a.example.com", "*.example.com", false}, // the name is never a pattern
	}
	for _, tt := range tests {
		if got := dnsMatch(tt.san, tt.name); got != tt.want {
			t.Errorf("dnsMatch(%q, %q) = %v, want %v", tt.san, tt.name, got, tt.want)
		}
	}
}
