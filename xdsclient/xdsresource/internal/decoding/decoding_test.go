package decoding_test

import (
	"strings"
	"testing"

	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/xdslens/xdslens/internal/testing/testmain"
	"github.com/xdslens/xdslens/xdsclient/xdsresource/internal/decoding"
)

func TestMain(m *testing.M) { testmain.Run(m) }

func TestPerMillion(t *testing.T) {
	for _, tc := range []struct {
		num  uint32
		den  typev3.FractionalPercent_DenominatorType
		want uint32
	}{
		{5, typev3.FractionalPercent_HUNDRED, 50_000},
		{5, typev3.FractionalPercent_TEN_THOUSAND, 500},
		{5, typev3.FractionalPercent_MILLION, 5},
		{200, typev3.FractionalPercent_HUNDRED, 1_000_000},
		{4_000_000_000, typev3.FractionalPercent_HUNDRED, 1_000_000},
	} {
		got, err := decoding.PerMillion(&typev3.FractionalPercent{Numerator: tc.num, Denominator: tc.den})
		if err != nil || got != tc.want {
			t.Errorf("decoding.PerMillion(%d/%v) = %d, %v; want %d", tc.num, tc.den, got, err, tc.want)
		}
	}
}

func TestPerMillionDenominator(t *testing.T) {
	if _, err := decoding.PerMillion(&typev3.FractionalPercent{Numerator: 1, Denominator: 7}); err == nil || !strings.Contains(err.Error(), "unsupported denominator 7") {
		t.Errorf("PerMillion with denominator 7: %v, want an error naming it", err)
	}
}

func TestAddWeight(t *testing.T) {
	var sum uint64
	if !decoding.AddWeight(&sum, 1<<31) || !decoding.AddWeight(&sum, 1<<31-1) || sum != 1<<32-1 {
		t.Errorf("weights up to MaxUint32: sum %d", sum)
	}
	if decoding.AddWeight(&sum, 1) {
		t.Errorf("AddWeight past MaxUint32 reports that the sum %d fits", sum)
	}
}

func TestPlural(t *testing.T) {
	for n, want := range map[int]string{0: "0 routes", 1: "1 route", 2: "2 routes"} {
		if got := decoding.Plural(n, "route", "routes"); got != want {
			t.Errorf("Plural(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestUnmarshal(t *testing.T) {
	d := new(durationpb.Duration)
	if err := decoding.Unmarshal([]byte{0x08, 0x05}, d); err != nil || d.GetSeconds() != 5 {
		t.Errorf("Unmarshal of seconds 5: %v, %v", d, err)
	}
	err := decoding.Unmarshal([]byte{0x08}, new(durationpb.Duration))
	if err == nil || !strings.HasPrefix(err.Error(), "cannot unmarshal google.protobuf.Duration: ") {
		t.Errorf("Unmarshal of a truncated message: %v, want an error naming google.protobuf.Duration", err)
	}
	if got := decoding.TypeURLOf(d); got != "type.googleapis.com/google.protobuf.Duration" {
		t.Errorf("TypeURLOf(Duration) = %q", got)
	}
}

// TestCanonicalTypeURL: a type URL names what follows its last "/",
// whatever comes before, as gRPC C-core and protobuf's Any read it; one
// that is empty, has no "/" or ends with one names nothing.
func TestCanonicalTypeURL(t *testing.T) {
	for _, tc := range []struct{ url, want, err string }{
		{"type.googleapis.com/a.B", "type.googleapis.com/a.B", ""},
		{"example.com/a.B", "type.googleapis.com/a.B", ""},
		{"example.com/x/y/a.B", "type.googleapis.com/a.B", ""},
		{"/a.B", "type.googleapis.com/a.B", ""},
		{"", "", "type_url: not set"},
		{"a.B", "", `type_url: "a.B" names no type (want PREFIX/TYPE)`},
		{"type.googleapis.com/", "", `type_url: "type.googleapis.com/" names no type (want PREFIX/TYPE)`},
	} {
		got, err := decoding.CanonicalTypeURL(tc.url)
		if got != tc.want || (err == nil) != (tc.err == "") || err != nil && err.Error() != tc.err {
			t.Errorf("CanonicalTypeURL(%q) = %q, %v; want %q, %q", tc.url, got, err, tc.want, tc.err)
		}
	}
}
