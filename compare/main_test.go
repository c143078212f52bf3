package compare_test

import (
	"testing"

	"github.com/xdslens/xdslens/internal/testing/testmain"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.Cleanup(testmain.Exit))
}
