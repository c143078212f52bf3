package rpcstatus_test

import (
	"errors"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/xdslens/xdslens/internal/rpcstatus"
)

// TestUnsettled: an attempt held because gRPC-Go ended it without a
// status takes its status from what follows it, as the package doc lists:
// the RPC's end, a retry by the interceptors, a transparent retry
// (UNAVAILABLE), another attempt (UNKNOWN); once the RPC has ended, an
// attempt is not held but takes the RPC's status at once.
func TestUnsettled(t *testing.T) {
	a := new(int)
	rpcErr := status.Error(codes.PermissionDenied, "denied")
	for _, tc := range []struct {
		name   string
		settle func(u *rpcstatus.Unsettled[*int]) (*int, error, bool)
		want   codes.Code
	}{
		{"the RPC ends", func(u *rpcstatus.Unsettled[*int]) (*int, error, bool) {
			got, ok := u.End(rpcErr)
			return got, rpcErr, ok
		}, codes.PermissionDenied},
		{"the RPC ends well", func(u *rpcstatus.Unsettled[*int]) (*int, error, bool) { got, ok := u.End(nil); return got, nil, ok }, codes.OK},
		{"the interceptors retry it", func(u *rpcstatus.Unsettled[*int]) (*int, error, bool) {
			got, ok := u.Take()
			return got, status.Error(codes.Unavailable, ""), ok
		}, codes.Unavailable},
		{"a transparent retry follows", func(u *rpcstatus.Unsettled[*int]) (*int, error, bool) { return u.Next(true) }, codes.Unavailable},
		{"another attempt follows", func(u *rpcstatus.Unsettled[*int]) (*int, error, bool) { return u.Next(false) }, codes.Unknown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var u rpcstatus.Unsettled[*int]
			if _, _, ok := u.Next(false); ok {
				t.Fatal("an attempt began while none was held, and one was taken")
			}
			if _, known := u.Hold(a); known {
				t.Fatal("Hold before the RPC ended says the status is known")
			}
			got, err, ok := tc.settle(&u)
			if !ok || got != a || status.Code(err) != tc.want {
				t.Fatalf("took %v (%v) with %v, want the attempt held with %v", got, ok, err, tc.want)
			}
			if _, ok := u.Take(); ok {
				t.Error("the attempt was taken twice")
			}
		})
	}
	var u rpcstatus.Unsettled[*int]
	u.End(rpcErr)
	if err, known := u.Hold(a); !known || !errors.Is(err, rpcErr) {
		t.Errorf("Hold after the RPC ended: %v, %v; want the RPC's error, known", err, known)
	}
	if _, ok := u.End(rpcErr); ok {
		t.Error("an attempt that ended after its RPC was held")
	}
}
