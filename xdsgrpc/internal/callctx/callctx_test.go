package callctx_test

import (
	"context"
	"testing"

	"github.com/xdslens/xdslens/xdsgrpc/internal/callctx"
)

func TestCallInContext(t *testing.T) {
	if c := callctx.From(context.Background()); c != nil {
		t.Fatalf("From(Background) = %v, want nil", c)
	}
	if c := callctx.From(nil); c != nil { //nolint:staticcheck // a nil context is what some pick infos carry
		t.Fatalf("From(nil) = %v, want nil", c)
	}
	c := &callctx.Call{Hash: 42, HasHash: true}
	ctx := callctx.With(context.Background(), c)
	if got := callctx.From(ctx); got != c {
		t.Fatalf("From = %p, want %p", got, c)
	}
	if _, ok := callctx.RequestHash(ctx); ok {
		t.Error("RequestHash of an undecided Call reports a hash")
	}
	c.Decided = true
	if h, ok := callctx.RequestHash(ctx); !ok || h != 42 {
		t.Errorf("RequestHash = %d, %v; want 42, true", h, ok)
	}
}
