package xdsduration_test

import (
	"math"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/xdslens/xdslens/internal/testing/testmain"
	"github.com/xdslens/xdslens/internal/xdsduration"
)

func TestMain(m *testing.M) { testmain.Run(m) }

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name    string
		d       *durationpb.Duration
		want    time.Duration
		wantErr bool
	}{
		{"nil", nil, 0, false},
		{"zero", &durationpb.Duration{}, 0, false},
		{"1.5s", &durationpb.Duration{Seconds: 1, Nanos: 500_000_000}, 1500 * time.Millisecond, false},
		{"largest time.Duration", &durationpb.Duration{Seconds: 9_223_372_036, Nanos: 854_775_807}, math.MaxInt64, false},
		{"one nanosecond beyond time.Duration", &durationpb.Duration{Seconds: 9_223_372_036, Nanos: 854_775_808}, math.MaxInt64, false},
		{"largest Duration", &durationpb.Duration{Seconds: xdsduration.MaxSeconds, Nanos: 999_999_999}, math.MaxInt64, false},
		{"beyond the largest Duration", &durationpb.Duration{Seconds: xdsduration.MaxSeconds + 1}, 0, true},
		{"largest int64 seconds", &durationpb.Duration{Seconds: math.MaxInt64}, 0, true},
		{"negative seconds", &durationpb.Duration{Seconds: -1}, 0, true},
		{"negative nanos", &durationpb.Duration{Nanos: -1}, 0, true},
		{"nanos of a second or more", &durationpb.Duration{Nanos: 1_000_000_000}, 0, true},
		{"smallest int64 seconds", &durationpb.Duration{Seconds: math.MinInt64}, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := xdsduration.Parse(tc.d)
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Fatalf("Parse(%v) = %v, %v; want %v, error %v", tc.d, got, err, tc.want, tc.wantErr)
			}
		})
	}
}

func TestTimes(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		n    int64
		want time.Duration
	}{
		{25 * time.Millisecond, 10, 250 * time.Millisecond},
		{0, 10, 0},
		{time.Second, 0, 0},
		{math.MaxInt64 / 10, 10, math.MaxInt64 / 10 * 10},
		{math.MaxInt64/10 + 1, 10, math.MaxInt64},
		{math.MaxInt64, 10, math.MaxInt64},
	} {
		if got := xdsduration.Times(tc.d, tc.n); got != tc.want {
			t.Errorf("Times(%v, %d) = %v, want %v", tc.d, tc.n, got, tc.want)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add(int64(1), int32(0))
	f.Add(int64(xdsduration.MaxSeconds), int32(999_999_999))
	f.Add(int64(-1), int32(-1))
	f.Fuzz(func(t *testing.T, s int64, n int32) {
		got, err := xdsduration.Parse(&durationpb.Duration{Seconds: s, Nanos: n})
		if err != nil {
			return
		}
		if got < 0 {
			t.Fatalf("Parse(%d s, %d ns) = %v, negative", s, n, got)
		}
		if want := (&durationpb.Duration{Seconds: s, Nanos: n}).AsDuration(); got != want {
			t.Fatalf("Parse(%d s, %d ns) = %v, AsDuration %v", s, n, got, want)
		}
	})
}
