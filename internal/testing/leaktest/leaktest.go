// Package leaktest finds the goroutines that a package left running, for
// tests that check that a Stop or Close ends everything it started.
package leaktest

import (
	"context"
	"runtime"
	"strings"
	"time"
)

// Left waits until no goroutine runs code of the package whose import path
// is pkg, tests aside, and returns the stacks of those still running when ctx ends. One look is
// not enough: a goroutine whose last act woke the caller (it closed the
// channel a Stop waits on, in a defer) may still be returning.
func Left(ctx context.Context, pkg string) []string {
	for {
		g := Running(pkg)
		if len(g) == 0 || ctx.Err() != nil {
			return g
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Millisecond):
		}
	}
}

// Running returns the stacks of the goroutines that run code of the
// package whose import path is pkg, now: a function of pkg on the stack, or
// created by one. The goroutines of the tests themselves (the test binary's
// main goroutine and those of testing.T) are left out, whatever they call.
func Running(pkg string) []string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var out []string
	for g := range strings.SplitSeq(string(buf), "\n\n") {
		if strings.Contains(g, "\ntesting.tRunner(") || strings.Contains(g, "\ntesting.(*M).Run(") {
			continue
		}
		if strings.Contains(g, "\n"+pkg+".") || strings.Contains(g, "\ncreated by "+pkg+".") {
			out = append(out, g)
		}
	}
	return out
}
