//go:build race

package main

// raceEnabled reports whether the tests run with the race detector, so the
// binary under test is built with it too.
const raceEnabled = true
