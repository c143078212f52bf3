// Package xerr makes the errors a client gives its watchers, and bounds
// what they quote. An error names the resource, the xDS server and the
// node ID, as gRFC A88 asks, and carries a gRPC status code meant for the
// watcher. Strings the client does not write itself (a server's
// version_info or status message, a caller's name) are cut where they are
// quoted, so that none of them can make an error, a log line or CSDS
// arbitrarily large; each cut is marked with how much was left out.
package xerr

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/xdslens/xdslens/internal/truncate"
)

// The bounds: a quoted string is cut at MaxShown bytes, the cause of an
// error at MaxCause, a whole error message at MaxMessage.
const (
	MaxShown   = 1 << 10
	MaxCause   = 8 << 10
	MaxMessage = 16 << 10
)

// Shown returns s, a string the client did not write, as a message quotes
// it: in Go syntax, cut at MaxShown bytes.
func Shown(s string) string { return strconv.Quote(Bound(s)) }

// Bound returns s, a string the client did not write, cut at MaxShown
// bytes: s itself when it is no longer.
func Bound(s string) string { return truncate.String(s, MaxShown) }

// ShownErr returns err's text cut at MaxCause bytes, for a log line or a
// message that carries it; "" for nil.
func ShownErr(err error) string {
	if err == nil {
		return ""
	}
	return truncate.String(err.Error(), MaxCause)
}

// Status returns a status error of code with msg, cut at MaxMessage bytes
// and made valid UTF-8, as every message the client gives watchers is.
func Status(code codes.Code, msg string) error {
	msg = truncate.String(msg, MaxMessage)
	if !utf8.ValidString(msg) {
		msg = strings.ToValidUTF8(msg, "\ufffd")
	}
	return status.Error(code, msg)
}

// Resource returns the status error given to the watchers of one
// resource: of type typ (its short name), named name, from server, for the
// node nodeID, with cause, which is cut at MaxCause bytes.
func Resource(code codes.Code, typ, name, server, nodeID, cause string) error {
	cause = truncate.String(cause, MaxCause)
	return Status(code, fmt.Sprintf("%s %q from xDS server %s (node ID %s): %s", typ, name, Shown(server), Shown(nodeID), cause))
}

// Redacted returns err with its text passed through redact, which hides
// secrets (the credentials of a server URI, see
// bootstrap.ServerConfig.Redact): err itself when redact changes nothing.
// The error it returns keeps err's gRPC status code and answers
// errors.Is as err does, but does not unwrap to err, whose text is what
// it hides.
func Redacted(err error, redact func(string) string) error {
	if err == nil {
		return nil
	}
	text := err.Error()
	msg := redact(text)
	if msg == text {
		return err
	}
	return &redactedError{msg: msg, err: err}
}

type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }

// Is reports whether the hidden error is target, or wraps it.
func (e *redactedError) Is(target error) bool { return errors.Is(e.err, target) }

// GRPCStatus is the hidden error's status code with the redacted text;
// UNKNOWN when it has none, as status.FromError says of such an error.
func (e *redactedError) GRPCStatus() *status.Status {
	code := codes.Unknown
	var gs interface{ GRPCStatus() *status.Status }
	if errors.As(e.err, &gs) && gs.GRPCStatus() != nil {
		code = gs.GRPCStatus().Code()
	}
	return status.New(code, e.msg)
}

// Named is what ShortName reads of a resource type.
type Named interface {
	ShortName() string
	TypeURL() string
}

// ShortName returns the short name of t ("cds"), or its type URL if it has
// none.
func ShortName(t Named) string {
	if s := t.ShortName(); s != "" {
		return s
	}
	return t.TypeURL()
}
