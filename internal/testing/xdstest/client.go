package xdstest

import (
	"bytes"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/xdslens/xdslens/xdsclient"
	"github.com/xdslens/xdslens/xdsclient/bootstrap"
)

// ClientOptions returns options that suit a client in a test, followed by
// opts, which may override them: a backoff of 10ms after a stream fails,
// streams restarted with no minimum interval (so that a stream ended after
// a response is restarted at once, as gRFC A57 says), gRFC A88 data error
// handling whatever the environment says, and no log output.
func ClientOptions(opts ...xdsclient.Option) []xdsclient.Option {
	return append([]xdsclient.Option{
		xdsclient.WithBackoff(func(int) time.Duration { return 10 * time.Millisecond }),
		xdsclient.WithMinStreamInterval(0),
		xdsclient.WithLegacyDataErrorHandling(false),
		xdsclient.WithLogger(slog.New(slog.DiscardHandler)),
	}, opts...)
}

// NewClient makes a client of cfg with opts, as given (see
// [ClientOptions]), fails t if it cannot, and closes the client when the
// test ends.
func NewClient(t testing.TB, cfg *bootstrap.Config, opts ...xdsclient.Option) *xdsclient.Client {
	t.Helper()
	c, err := xdsclient.New(cfg, opts...)
	if err != nil {
		t.Fatalf("xdsclient.New: %v", err)
	}
	t.Cleanup(c.Close)
	return c
}

// SyncBuffer is a bytes.Buffer that is safe for concurrent use, to hold
// what a logger writes while a test reads it. The zero value is empty and
// ready.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p to the buffer.
func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns everything written so far.
func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
