package xdsconfig

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Bounds on what reaches an RPC's status message. A server controls the
// messages of its TP3 errors and of the resources a client rejects, so
// every message the manager builds is cut to these sizes.
const (
	// MaxMessageLen is the largest error message or resolution note the
	// manager produces, in bytes.
	MaxMessageLen = 16 << 10
	// maxPartLen bounds one resource's part of a message, so that one long
	// error leaves room for the others in a resolution note.
	maxPartLen = 3 << 10
	// maxNodeIDLen bounds the node ID as messages quote it.
	maxNodeIDLen = 512
)

// ResourceError is the error of a whole Config (given to Watcher.Error) or
// of one cluster slot (ClusterConfig.Err). For gRPC it is a status with
// code UNAVAILABLE (gRFC A54: the control plane never gives an RPC
// NOT_FOUND or INVALID_ARGUMENT), and its message names the resource, the
// cause and the xDS node ID, in at most MaxMessageLen bytes. Cause keeps
// the error as the xDS client reported it, with its own code, for people
// and tools that show it.
type ResourceError struct {
	// Kind is "LDS", "RDS" or "CDS": the kind of resource that failed.
	Kind string
	// Name is the resource's name.
	Name string
	// Cause is the error the xDS client reported for the resource (its
	// status code may be NOT_FOUND, INVALID_ARGUMENT, ...), or nil when the
	// manager found the problem itself (a Listener that is not an API
	// listener, no virtual host for the authority, an invalid aggregate
	// cluster graph).
	Cause error
	msg   string
}

// Error returns the message, such as
// `CDS resource "c1": cds "c1" from xDS server "s" (node ID "n"): does not exist`.
func (e *ResourceError) Error() string { return e.msg }

// GRPCStatus returns the error as a gRPC status with code UNAVAILABLE.
func (e *ResourceError) GRPCStatus() *status.Status { return status.New(codes.Unavailable, e.msg) }

// Unwrap returns Cause.
func (e *ResourceError) Unwrap() error { return e.Cause }

// CauseCode is the status code of Cause (UNAVAILABLE when Cause is nil or
// carries no status): the code the xDS client reported, for display.
func (e *ResourceError) CauseCode() codes.Code {
	if e.Cause == nil {
		return codes.Unavailable
	}
	if st, ok := status.FromError(e.Cause); ok {
		return st.Code()
	}
	return codes.Unavailable
}

// messages builds the bounded messages of one manager, all naming its node.
type messages struct {
	nodeID string
	// mark is how a message names the node: `node ID "N"`, the form the
	// xDS client's errors use.
	mark string
	// nodeNote is the resolution note of a cluster with no ambient error,
	// "xDS node ID:N" as gRPC C-core writes it.
	nodeNote string
}

func newMessages(nodeID string) messages {
	id := bound(nodeID, maxNodeIDLen)
	return messages{nodeID: id, mark: "node ID " + strconv.Quote(id), nodeNote: "xDS node ID:" + id}
}

// withNode returns msg naming the node, msg itself when it already does.
func (m messages) withNode(msg string) string {
	if strings.Contains(msg, m.mark) {
		return msg
	}
	return msg + " (" + m.mark + ")"
}

// causeOf is the message of err without the "rpc error: code = ..." frame.
func causeOf(err error) string {
	if st, ok := status.FromError(err); ok {
		return st.Message()
	}
	return err.Error()
}

// resourceError returns the ResourceError of resource kind/name, caused
// by cause (nil when the manager found the problem itself, then described
// by detail).
func (m messages) resourceError(kind, name string, cause error, detail string) *ResourceError {
	if cause != nil {
		detail = causeOf(cause)
	}
	msg := m.withNode(bound(fmt.Sprintf("%s resource %q: %s", kind, name, detail), MaxMessageLen-len(m.mark)-3))
	return &ResourceError{Kind: kind, Name: name, Cause: cause, msg: msg}
}

// part returns one resource's part of a resolution note, such as
// `LDS resource "L": ...`, naming the node.
func (m messages) part(kind, name, detail string) string {
	return m.withNode(bound(fmt.Sprintf("%s resource %q: %s", kind, name, detail), maxPartLen))
}

// join joins the non-empty parts of a resolution note with "; ", in at
// most MaxMessageLen bytes; "" if all are empty.
func (m messages) join(parts ...string) string {
	n, only := 0, ""
	for _, p := range parts {
		if p != "" {
			n++
			only = p
		}
	}
	if n <= 1 {
		return only
	}
	var b strings.Builder
	for _, p := range parts {
		if p == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("; ")
		}
		b.WriteString(p)
	}
	return bound(b.String(), MaxMessageLen)
}

// note is the resolution note of the parts: joined, or the node note
// when all are empty (gRFC A88). Every part names the node already.
func (m messages) note(parts ...string) string {
	if s := m.join(parts...); s != "" {
		return s
	}
	return m.nodeNote
}

// truncated ends a message that was cut.
const truncated = "…[truncated]"

// bound returns s cut to at most n bytes, on a UTF-8 boundary, ending in
// a mark that says so.
func bound(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - len(truncated)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:max(cut, 0)] + truncated
}
