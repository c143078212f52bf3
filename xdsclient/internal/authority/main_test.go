package authority_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/xdslens/xdslens/internal/testing/testmain"
)

// TestMain checks that no goroutine of a server's connection or lane
// outlives the tests, and ends the test binary without the race
// detector's pause at exit.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m, goleak.Cleanup(testmain.Exit)) }
