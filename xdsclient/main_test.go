package xdsclient_test

import (
	"testing"

	"github.com/xdslens/xdslens/internal/testing/testmain"
	"github.com/xdslens/xdslens/internal/testing/xdstest"
)

// TestMain runs the parallel tests, which wait on loopback servers and
// timers rather than on the CPU, several at once.
func TestMain(m *testing.M) {
	xdstest.SetParallel(8)
	testmain.Run(m)
}
