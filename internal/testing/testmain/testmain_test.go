package testmain_test

import (
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/xdslens/xdslens/internal/testing/testmain"
)

// exitEnv, when set, makes this test binary write a line and end through
// testmain.Exit with the status it names, instead of running the tests.
const exitEnv = "TESTMAIN_TEST_EXIT"

func TestMain(m *testing.M) {
	if s := os.Getenv(exitEnv); s != "" {
		code, err := strconv.Atoi(s)
		if err != nil {
			panic(err)
		}
		os.Stdout.WriteString("written before the exit\n")
		testmain.Exit(code)
	}
	testmain.Run(m)
}

// TestExit ends a process through Exit with a race detector pause of a
// minute (GORACE; ignored without the race detector): it ends at once with
// the status given, and what it wrote before is there.
func TestExit(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, code := range []int{0, 3} {
		cmd := exec.Command(self)
		cmd.Env = append(os.Environ(), exitEnv+"="+strconv.Itoa(code), "GORACE=atexit_sleep_ms=60000")
		var out strings.Builder
		cmd.Stdout = &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		timer := time.NewTimer(30 * time.Second)
		select {
		case err = <-done:
			timer.Stop()
		case <-timer.C:
			cmd.Process.Kill()
			<-done
			t.Fatalf("Exit(%d): the process did not end within 30s (the race detector's pause is a minute)", code)
		}
		got := 0
		if exit := (*exec.ExitError)(nil); errors.As(err, &exit) {
			got = exit.ExitCode()
		} else if err != nil {
			t.Fatalf("Exit(%d): %v", code, err)
		}
		if got != code || out.String() != "written before the exit\n" {
			t.Errorf("Exit(%d): status %d, stdout %q; want %d and the line written before", code, got, out.String(), code)
		}
	}
}
