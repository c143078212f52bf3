package h2test_test

import (
	"testing"

	"github.com/xdslens/xdslens/internal/testing/testmain"
)

// TestMain ends the test binary without the race detector's pause at exit.
func TestMain(m *testing.M) { testmain.Run(m) }
