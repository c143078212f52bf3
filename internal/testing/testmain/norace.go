//go:build !race

package testmain

import "os"

// exit is os.Exit: without the race detector there is no pause to skip.
func exit(code int) { os.Exit(code) }
