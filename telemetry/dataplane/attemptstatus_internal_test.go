package dataplane

import (
	"errors"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// TestUnsettled: an attempt held because gRPC-Go ended it without a
// status takes its status from what follows it, as attemptstatus.go
// lists: the RPC's end, a retry by xdslens, a transparent retry
// (UNAVAILABLE), another attempt (UNKNOWN); once the RPC has ended, an
// attempt is not held but takes the RPC's status at once.
func TestUnsettled(t *testing.T) {
	a := new(int)
	rpcErr := status.Error(codes.PermissionDenied, "denied")
	for _, tc := range []struct {
		name   string
		settle func(u *unsettled[*int]) (*int, error, bool)
		want   codes.Code
	}{
		{"the RPC ends", func(u *unsettled[*int]) (*int, error, bool) { got, ok := u.end(rpcErr); return got, rpcErr, ok }, codes.PermissionDenied},
		{"the RPC ends well", func(u *unsettled[*int]) (*int, error, bool) { got, ok := u.end(nil); return got, nil, ok }, codes.OK},
		{"xdslens retries it", func(u *unsettled[*int]) (*int, error, bool) {
			got, ok := u.retried()
			return got, status.Error(codes.Unavailable, ""), ok
		}, codes.Unavailable},
		{"a transparent retry follows", func(u *unsettled[*int]) (*int, error, bool) { return u.next(true) }, codes.Unavailable},
		{"another attempt follows", func(u *unsettled[*int]) (*int, error, bool) { return u.next(false) }, codes.Unknown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var u unsettled[*int]
			if _, _, ok := u.next(false); ok {
				t.Fatal("an attempt began while none was held, and one was taken")
			}
			if _, known := u.hold(a); known {
				t.Fatal("hold before the RPC ended says the status is known")
			}
			got, err, ok := tc.settle(&u)
			if !ok || got != a || status.Code(err) != tc.want {
				t.Fatalf("took %v (%v) with %v, want the attempt held with %v", got, ok, err, tc.want)
			}
			if _, ok := u.retried(); ok {
				t.Error("the attempt was taken twice")
			}
		})
	}
	var u unsettled[*int]
	u.end(rpcErr)
	if err, known := u.hold(a); !known || !errors.Is(err, rpcErr) {
		t.Errorf("hold after the RPC ended: %v, %v; want the RPC's error, known", err, known)
	}
	if _, ok := u.end(rpcErr); ok {
		t.Error("an attempt that ended after its RPC was held")
	}
}
