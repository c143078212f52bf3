package lane

import (
	"context"
	"testing"
)

// BenchmarkReentryChecks measures what a cancel and a Close pay to know
// whether they are called from inside a callback, on a client of three
// lanes (its own and two servers') that run nothing at the moment: Wait,
// after a Cancel, for a watcher whose callback does not run; Running, as
// Close asks it.
func BenchmarkReentryChecks(b *testing.B) {
	ctx, cancel := context.WithCancel(context.Background())
	var set Set
	defer func() { cancel(); set.Wait() }()
	for range 3 {
		New(&set, ctx, func(*rec, any, error, bool) {})
	}
	b.Run("cancel-wait", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			w := rec{name: "w"}
			w.Cancel()
			w.Wait(&set)
		}
	})
	b.Run("close-running", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if set.Running() {
				b.Fatal("Running outside a lane")
			}
		}
	})
}
