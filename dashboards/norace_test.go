//go:build !race

package dashboards_test

// raceFlags are the go build flags that build xdswatch as the tests are
// built: without the race detector.
var raceFlags []string
