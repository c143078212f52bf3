// Package xdswatch is the code of the xdswatch command (examples/xdswatch,
// whose package documentation is its manual): Run is the whole program
// and Main the process around it. The demo that runs without a bootstrap,
// its tour and the servers they run are package demo and its subpackages.
//
// The command's main package only calls Main. The code lives here so that
// a test binary anywhere in the module can be xdswatch itself: the
// dashboards' end-to-end tests run their own executable as xdswatch,
// exactly as this package's tests do, instead of building the command a
// second time.
package xdswatch
