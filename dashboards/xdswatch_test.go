package dashboards_test

// The end-to-end tests and the demo script's test run xdswatch as this
// test binary itself, which is xdswatch when runXdswatchEnv says so:
// nothing is built while the tests run, and the processes under test are
// built as the tests are (with the race detector when they have it).

import (
	"os"
	"os/exec"
	"testing"

	"github.com/xdslens/xdslens/internal/testing/testmain"
	"github.com/xdslens/xdslens/internal/testing/xdstest"
	"github.com/xdslens/xdslens/internal/xdswatch"
)

// runXdswatchEnv names the environment variable that makes this test
// binary be xdswatch: when it is "1", TestMain runs the command, with the
// process's arguments, instead of the tests.
const runXdswatchEnv = "DASHBOARDS_TEST_RUN_XDSWATCH"

// TestMain runs xdswatch when runXdswatchEnv says so; else it runs the
// tests, several at once, as they wait on Prometheus's scrapes and rule
// evaluations rather than on the CPU.
func TestMain(m *testing.M) {
	if os.Getenv(runXdswatchEnv) == "1" {
		xdswatch.Main() // exits
	}
	xdstest.SetParallel(8)
	testmain.Run(m)
}

// xdswatchExecutable returns the path of this test binary and the
// environment (the test's own, plus runXdswatchEnv) in which running it
// runs xdswatch: built with the race detector, it ends without the
// detector's one-second pause at exit, and with status 66 on a race.
func xdswatchExecutable(t *testing.T) (path string, env []string) {
	t.Helper()
	path, err := os.Executable()
	if err != nil {
		t.Fatalf("the test binary as xdswatch: %v", err)
	}
	return path, append(os.Environ(), runXdswatchEnv+"=1", "GORACE=atexit_sleep_ms=0 exitcode=66")
}

// xdswatchCommand returns a command that runs xdswatch with args.
func xdswatchCommand(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	path, env := xdswatchExecutable(t)
	cmd := exec.Command(path, args...)
	cmd.Args[0] = "xdswatch"
	cmd.Env = env
	return cmd
}
