package dataplane_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/xdslens/xdslens/internal/testmain"
)

// TestMain checks that no goroutine outlives the tests.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.Cleanup(testmain.Exit))
}
