package exporters_test

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/metric"

	"github.com/xdslens/xdslens/exporters"
)

// syncBuffer is a bytes.Buffer for one writer and one reader at a time,
// which says when it was written to.
type syncBuffer struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	wrote chan struct{} // receives a value after a write, if it has room
}

func newSyncBuffer() *syncBuffer { return &syncBuffer{wrote: make(chan struct{}, 1)} }

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	select {
	case b.wrote <- struct{}{}:
	default:
	}
	return b.buf.Write(p)
}

// waitFor waits until s has been written n times.
func (b *syncBuffer) waitFor(t *testing.T, ctx context.Context, s string, n int) {
	t.Helper()
	for strings.Count(b.String(), s) < n {
		select {
		case <-b.wrote:
		case <-ctx.Done():
			t.Fatalf("%d exports of %s within %v, want %d", strings.Count(b.String(), s), s, testTimeout, n)
		}
	}
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestPushEveryInterval: a push exporter exports every interval, from
// OTEL_METRIC_EXPORT_INTERVAL when no option says otherwise.
func TestPushEveryInterval(t *testing.T) {
	t.Setenv("OTEL_METRIC_EXPORT_INTERVAL", "10")
	ctx := testContext(t)
	out := newSyncBuffer()
	p, err := exporters.Stdout(out)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Shutdown(ctx)
	c, _ := p.Meter("test").Int64Counter("pushed")
	c.Add(ctx, 1)
	out.waitFor(t, ctx, `"pushed"`, 3)
}

// TestShutdownDuringPush shuts down a push exporter while one of its
// periodic exports is under way (a collection that waits for its
// context): the export is cut short quietly, nothing reaches
// OpenTelemetry's global error handler (whose default is Go's log), and
// the last export happens.
func TestShutdownDuringPush(t *testing.T) {
	ctx := testContext(t)
	global := globalErrors(t)
	out := newSyncBuffer()
	p, err := exporters.Stdout(out, exporters.WithInterval(time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	meter := p.Meter("test")
	gauge, _ := meter.Int64ObservableGauge("collected")
	collecting := make(chan struct{})
	var calls atomic.Int32
	if _, err := meter.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		o.ObserveInt64(gauge, 1)
		if calls.Add(1) == 1 {
			// The first collection waits until it is cut short.
			close(collecting)
			<-ctx.Done()
			return ctx.Err()
		}
		return nil
	}, gauge); err != nil {
		t.Fatal(err)
	}
	select {
	case <-collecting:
	case <-ctx.Done():
		t.Fatal("no periodic export")
	}
	if err := p.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if !strings.Contains(out.String(), `"collected"`) {
		t.Errorf("no last export at Shutdown: %q", out.String())
	}
	if len(*global) != 0 {
		t.Errorf("OpenTelemetry's global error handler got %v", *global)
	}
}
