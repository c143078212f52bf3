package demo

// What the tour shows at each step, and how the client's state is
// checked against it.

import (
	"context"
	"fmt"
	"strings"

	"google.golang.org/grpc/codes"

	"github.com/xdslens/xdslens/telemetry/dataplane"
	"github.com/xdslens/xdslens/xdsserver"
)

// Step is one step of the tour: what it does to the control plane or
// the watches, and what the client shows once it took effect.
type Step struct {
	Title string
	// what is printed when the step starts: everything the step changes.
	what string
	// act makes the change; nil for none.
	act func(ctx context.Context) error
	// Goals are what the client shows afterwards, in order; the tour
	// prints each when reached, with what changed since the one before,
	// and holds the last for one step interval.
	Goals []Goal
}

// Goal is what the client shows at one point of the tour: its cache,
// and what the RPCs through Target see.
type Goal struct {
	// Cache is every entry of the client's cache.
	Cache Cache
	// Serving, when set, is the serving mode of the demo's xDS-enabled
	// server.
	Serving *xdsserver.Mode
	// RPC is the outcome of the last RPC through Target.
	RPC RPCGoal
	// Ejected, when set, is how many endpoints outlier detection has
	// ejected in the channel to Target.
	Ejected *int
}

// RPCGoal is the outcome of an RPC the tour announces: its code, and what
// its message names.
type RPCGoal struct {
	Code codes.Code
	// Names are strings the message contains.
	Names []string
	// Plain RPCs take one attempt and no fault.
	Plain bool
}

// RPC is the outcome of one RPC through a channel of xdswatch.
type RPC struct {
	// Target is the channel's argument, such as Target.
	Target string
	Code   codes.Code
	// Message is the status message, "" with OK.
	Message string
	// Attempts counts the RPC's attempts (1 without retries); Fault is
	// the fault injected ("delay", "abort", "delay+abort"), "" for none.
	Attempts int
	Fault    string
}

// Ejection is an ejection or a return of an endpoint by outlier
// detection in a channel of xdswatch.
type Ejection struct {
	// Target is the channel's argument, such as Target.
	Target string
	// Address is the endpoint's; Ejected is false when it returns.
	Address string
	Ejected bool
}

// Matches reports whether r, the last RPC (nil when none ended yet), is
// what g announces.
func (g RPCGoal) Matches(r *RPC) bool {
	if r == nil || r.Code != g.Code || g.Plain && (r.Attempts > 1 || r.Fault != "") {
		return false
	}
	for _, n := range g.Names {
		if !strings.Contains(r.Message, n) {
			return false
		}
	}
	return true
}

// String describes g for the tour's lines.
func (g RPCGoal) String() string {
	switch {
	case g.Code == codes.OK && g.Plain:
		return "RPCs through " + Target + " succeed in one attempt, without fault"
	case g.Code == codes.OK:
		return "RPCs through " + Target + " succeed"
	}
	return fmt.Sprintf("RPCs through %s fail %s, naming %s", Target, dataplane.StatusName(g.Code), strings.Join(g.Names, " and "))
}
