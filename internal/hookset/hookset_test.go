package hookset_test

import (
	"reflect"
	"slices"
	"testing"

	"github.com/xdslens/xdslens/internal/hookset"
	"github.com/xdslens/xdslens/internal/testing/testmain"
)

// TestMain ends the test binary without the race detector's pause at exit.
func TestMain(m *testing.M) { testmain.Run(m) }

type hooks struct {
	Started func(string)
	Ended   func(int)
}

// Join calls the funcs that are set, in order, skipping nil structs and
// unset fields; with none set the field stays nil, with one it is that
// func itself (no wrapper to call through).
func TestJoin(t *testing.T) {
	var calls []string
	record := func(who string) func(string) { return func(s string) { calls = append(calls, who+":"+s) } }
	started := func(h *hooks) func(string) { return h.Started }
	for _, tc := range []struct {
		name string
		hs   []*hooks
		want []string
	}{
		{"none", nil, nil},
		{"only nil structs and unset fields", []*hooks{nil, {}, {Ended: func(int) {}}}, nil},
		{"one", []*hooks{{}, {Started: record("a")}, nil}, []string{"a:x"}},
		{"three in order", []*hooks{{Started: record("a")}, nil, {}, {Started: record("b")}, {Started: record("c")}}, []string{"a:x", "b:x", "c:x"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls = nil
			f := hookset.Join(tc.hs, started)
			if tc.want == nil {
				if f != nil {
					t.Fatal("Join of no func is not nil")
				}
				return
			}
			f("x")
			if !slices.Equal(calls, tc.want) {
				t.Errorf("calls %q, want %q", calls, tc.want)
			}
		})
	}
	only := func(string) {}
	if got := hookset.Join([]*hooks{{}, {Started: only}}, started); reflect.ValueOf(got).Pointer() != reflect.ValueOf(only).Pointer() {
		t.Error("Join of one func wraps it")
	}
}
