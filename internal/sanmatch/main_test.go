package sanmatch_test

import (
	"testing"

	"github.com/xdslens/xdslens/internal/testing/testmain"
)

func TestMain(m *testing.M) { testmain.Run(m) }
