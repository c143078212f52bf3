package xdsgrpc

import (
	"testing"

	"github.com/xdslens/xdslens/internal/testing/hooksettest"
)

// compose joins every field of Hooks: each composed func calls the funcs
// of all the Hooks that set it, in order, and a field none sets stays nil.
func TestComposeEveryField(t *testing.T) { hooksettest.EveryField(t, compose) }
