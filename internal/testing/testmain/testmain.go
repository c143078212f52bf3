// Package testmain ends a test binary without the race detector's pause.
//
// A process built with the race detector that ends with status 0 first
// sleeps for GORACE's atexit_sleep_ms, one second by default, so that
// goroutines still running can report a race. For a test binary whose
// tests passed, that second is idle: the testing package has already
// failed the run for a race during or between its tests (up to the end of
// m.Run), and the packages that use goleak have checked that no goroutine
// outlived them. Run once per package, the pause made go test's slots idle
// for about a minute of a fresh clone's README test command.
//
// Every test package's TestMain ends through Run or Exit:
//
//	func TestMain(m *testing.M) { testmain.Run(m) }
//	func TestMain(m *testing.M) { goleak.VerifyTestMain(m, goleak.Cleanup(testmain.Exit)) }
//
// A test binary that runs itself as a command (as xdswatch's tests do)
// exits through the command's own path there, with the pause, unless its
// environment sets GORACE.
package testmain

import "testing"

// Run runs m's tests and ends the process with their status (Exit).
func Run(m *testing.M) { Exit(m.Run()) }

// Exit ends the process with code. Under the race detector it does so
// without the detector's pause at exit (a status other than 0 never had
// one); otherwise it is os.Exit.
func Exit(code int) { exit(code) }
