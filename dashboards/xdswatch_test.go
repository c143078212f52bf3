package dashboards_test

// The end-to-end tests and the demo script's test run xdswatch, built
// once per test binary and shared: a `go build` of xdswatch compiles its
// main package and links a large (race) binary, which is worth doing once,
// not once per test.

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/xdslens/xdslens/internal/xdstest"
)

// xdswatchBuild is the one build of xdswatch for this test binary.
var xdswatchBuild struct {
	once sync.Once
	dir  string // removed by TestMain
	bin  string
	err  error
}

// TestMain runs the parallel tests, which wait on Prometheus's scrapes and
// rule evaluations rather than on the CPU, all at once, and removes the
// shared xdswatch build when the tests have ended.
func TestMain(m *testing.M) {
	xdstest.SetParallel(8)
	code := m.Run()
	if xdswatchBuild.dir != "" {
		os.RemoveAll(xdswatchBuild.dir)
	}
	os.Exit(code)
}

// xdswatchBinary returns xdswatch built from examples/xdswatch as the tests
// are built (with the race detector when they have it, so that the build
// reuses the packages the test build compiled). The first caller builds
// it; the others wait for that build.
func xdswatchBinary(t *testing.T) string {
	t.Helper()
	b := &xdswatchBuild
	b.once.Do(func() {
		b.dir, b.err = os.MkdirTemp("", "xdslens-dashboards-")
		if b.err != nil {
			return
		}
		bin := filepath.Join(b.dir, "xdswatch")
		args := append(append([]string{"build"}, raceFlags...), "-o", bin, "github.com/xdslens/xdslens/examples/xdswatch")
		if out, err := exec.Command("go", args...).CombinedOutput(); err != nil {
			b.err = fmt.Errorf("go build xdswatch: %v\n%s", err, out)
			return
		}
		b.bin = bin
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.bin
}
