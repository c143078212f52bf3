package xdsconfig

import (
	"runtime"
	"strconv"
	"strings"
)

// goid returns the calling goroutine's ID, from the first line of its
// stack trace ("goroutine 7 [running]:"), or -1. Stop uses it to know
// whether the Watcher called it, so as not to wait for itself.
func goid() int64 {
	var buf [64]byte
	line := string(buf[:runtime.Stack(buf[:], false)])
	line = strings.TrimPrefix(line, "goroutine ")
	id, _, _ := strings.Cut(line, " ")
	n, err := strconv.ParseInt(id, 10, 64)
	if err != nil {
		return -1
	}
	return n
}
