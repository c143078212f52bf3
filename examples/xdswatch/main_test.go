package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/xdslens/xdslens/internal/testing/testmain"
)

// runMainEnv makes this test binary run main instead of the tests.
const runMainEnv = "XDSWATCH_MAIN_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(runMainEnv) == "1" {
		main() // exits
		os.Stderr.WriteString("xdswatch: main returned instead of exiting\n")
		os.Exit(3)
	}
	testmain.Run(m)
}

// TestMainIsTheCommand runs main as a process, as a user runs the command
// (the behaviour itself is tested in internal/xdswatch): -h prints the
// usage on standard output with status 0, and a bad flag gives status 2
// and one line on standard error.
func TestMainIsTheCommand(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (stdout, stderr string, code int) {
		cmd := exec.Command(self, args...)
		cmd.Args[0] = "xdswatch"
		cmd.Env = append(os.Environ(), runMainEnv+"=1", "GORACE=atexit_sleep_ms=0")
		var out, errOut strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		if exit, ok := err.(*exec.ExitError); ok {
			return out.String(), errOut.String(), exit.ExitCode()
		} else if err != nil {
			t.Fatalf("xdswatch %q: %v", args, err)
		}
		return out.String(), errOut.String(), 0
	}
	if out, _, code := run("-h"); code != 0 || !strings.HasPrefix(out, "usage: xdswatch") {
		t.Errorf("xdswatch -h: status %d, stdout %.40q..., want 0 and the usage", code, out)
	}
	if out, errOut, code := run("--nope"); code != 2 || out != "" || !strings.HasPrefix(errOut, "xdswatch: ") || strings.Count(errOut, "\n") != 1 {
		t.Errorf("xdswatch --nope: status %d, stdout %q, stderr %q, want 2, nothing and one line", code, out, errOut)
	}
}
