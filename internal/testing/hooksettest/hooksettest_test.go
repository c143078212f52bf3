package hooksettest_test

import (
	"slices"
	"testing"

	"github.com/xdslens/xdslens/internal/hookset"
	"github.com/xdslens/xdslens/internal/testing/hooksettest"
	"github.com/xdslens/xdslens/internal/testing/testmain"
)

// TestMain ends the test binary without the race detector's pause at exit.
func TestMain(m *testing.M) { testmain.Run(m) }

type hooks struct {
	Started func(string)
	Ended   func(int)
}

func compose(hs []*hooks) *hooks {
	return &hooks{
		Started: hookset.Join(hs, func(h *hooks) func(string) { return h.Started }),
		Ended:   hookset.Join(hs, func(h *hooks) func(int) { return h.Ended }),
	}
}

// EveryField passes on a compose built with Join, and fails on one that
// forgets a field, calls the funcs out of order or sets a field that no
// struct sets.
func TestEveryField(t *testing.T) {
	hooksettest.EveryField(t, compose)
	for name, bad := range map[string]func([]*hooks) *hooks{
		"a field forgotten": func(hs []*hooks) *hooks {
			return &hooks{Started: hookset.Join(hs, func(h *hooks) func(string) { return h.Started })}
		},
		"out of order": func(hs []*hooks) *hooks {
			c := compose(slices.Clone(hs))
			slices.Reverse(hs)
			c.Ended = hookset.Join(hs, func(h *hooks) func(int) { return h.Ended })
			return c
		},
		"a field set by none": func(hs []*hooks) *hooks {
			c := compose(hs)
			if c.Ended == nil {
				c.Ended = func(int) {}
			}
			return c
		},
	} {
		ft := &fakeT{}
		hooksettest.EveryField(ft, bad)
		if !ft.failed {
			t.Errorf("%s: the check passed", name)
		}
	}
}

// fakeT records a failure instead of failing the test.
type fakeT struct {
	testing.TB
	failed bool
}

func (f *fakeT) Helper()               {}
func (f *fakeT) Errorf(string, ...any) { f.failed = true }
