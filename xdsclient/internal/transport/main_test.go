package transport

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/xdslens/xdslens/internal/testing/testmain"
)

// TestMain checks that no goroutine of a Conn outlives the tests (each
// closes its Conn), and ends the test binary without the race detector's
// pause at exit.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m, goleak.Cleanup(testmain.Exit)) }
