package leaktest_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/xdslens/xdslens/internal/testing/leaktest"
	"github.com/xdslens/xdslens/internal/testing/testmain"
)

func TestMain(m *testing.M) { testmain.Run(m) }

// park is code of this package for a goroutine to run.
func park(stop <-chan struct{}, stopped chan<- struct{}) {
	defer close(stopped)
	<-stop
}

// Left reports a goroutine while it runs, waits for one that is ending,
// and gives up when its context ends.
func TestLeft(t *testing.T) {
	const pkg = "github.com/xdslens/xdslens/internal/testing/leaktest_test"
	stop, stopped := make(chan struct{}), make(chan struct{})
	go park(stop, stopped)
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if g := leaktest.Left(ctx, pkg); len(g) != 1 || !strings.Contains(g[0], "leaktest_test.park") {
		t.Fatalf("Left with park running: %q, want park's stack", g)
	}
	close(stop)
	<-stopped // park may still be returning: Left must wait for it
	if g := leaktest.Left(t.Context(), pkg); len(g) != 0 {
		t.Errorf("Left after park returned: %q, want nothing", g)
	}
	if g := leaktest.Running("example.com/no/such/package"); len(g) != 0 {
		t.Errorf("Running of a package with no code running: %q", g)
	}
}
