//go:build race

package dashboards_test

// raceFlags are the go build flags that build xdswatch as the tests are
// built: with the race detector, so that building it reuses the packages
// the test build compiled instead of compiling them all again.
var raceFlags = []string{"-race"}
