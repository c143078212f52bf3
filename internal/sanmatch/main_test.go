package sanmatch_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/xdslens/xdslens/internal/testing/testmain"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, goleak.Cleanup(testmain.Exit)) }
