package xdstest

import (
	"flag"
	"strconv"
)

// SetParallel lets up to n parallel tests run at once, unless the command
// line sets -test.parallel, which always wins. Call it from TestMain
// before m.Run.
//
// go test's default is GOMAXPROCS parallel tests, right for tests that use
// the CPU. Tests that mostly wait (on loopback servers, timers, processes
// they start) leave those slots idle, and a package of them holds one of
// go test's package slots for the sum of their waits; running more of them
// at once ends the package sooner without giving any test less CPU than
// it needs.
func SetParallel(n int) {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) {
		if f.Name == "test.parallel" {
			set = true
		}
	})
	if !set {
		if err := flag.Set("test.parallel", strconv.Itoa(n)); err != nil {
			panic("xdstest: " + err.Error())
		}
	}
}
