package xerr

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

type named struct{ short, url string }

func (n named) ShortName() string { return n.short }
func (n named) TypeURL() string   { return n.url }

// What a server or a caller chooses is quoted within bounds; an error for
// a watcher carries its code, valid UTF-8, the resource, the server and
// the node.
func TestBounds(t *testing.T) {
	long := strings.Repeat("x", 10*MaxMessage)
	if got := Shown(long); len(got) > MaxShown+64 || !strings.HasPrefix(got, `"xxx`) {
		t.Errorf("Shown of %d bytes: %d bytes, want a quoted string of about %d", len(long), len(got), MaxShown)
	}
	if got := Shown("a\nb"); got != `"a\nb"` {
		t.Errorf("Shown(a newline b) = %s, want it in Go syntax", got)
	}
	if got := ShownErr(errors.New(long)); len(got) > MaxCause+64 {
		t.Errorf("ShownErr of %d bytes: %d bytes, want about %d", len(long), len(got), MaxCause)
	}
	if ShownErr(nil) != "" {
		t.Error("ShownErr(nil) is not empty")
	}
	st := status.Convert(Status(codes.InvalidArgument, long+"\xff"))
	if st.Code() != codes.InvalidArgument || len(st.Message()) > MaxMessage+64 || !utf8.ValidString(st.Message()) {
		t.Errorf("Status: code %v, %d bytes, valid UTF-8 %v; want InvalidArgument, about %d bytes, valid", st.Code(), len(st.Message()), utf8.ValidString(st.Message()), MaxMessage)
	}
	if st := status.Convert(Status(codes.NotFound, "bad \xff byte")); st.Message() != "bad \ufffd byte" {
		t.Errorf("Status of invalid UTF-8: %q, want the byte replaced", st.Message())
	}
	err := Resource(codes.NotFound, "cds", "c1", "server:1", "node-7", long)
	msg := status.Convert(err).Message()
	for _, part := range []string{`cds "c1"`, `"server:1"`, `"node-7"`} {
		if !strings.Contains(msg, part) {
			t.Errorf("Resource error %.200q does not carry %s", msg, part)
		}
	}
	if len(msg) > MaxCause+512 {
		t.Errorf("Resource error of a %d-byte cause: %d bytes, want the cause cut at %d", len(long), len(msg), MaxCause)
	}
}

func TestShortName(t *testing.T) {
	if got := ShortName(named{"cds", "type.googleapis.com/C"}); got != "cds" {
		t.Errorf("ShortName = %q, want cds", got)
	}
	if got := ShortName(named{"", "type.googleapis.com/C"}); got != "type.googleapis.com/C" {
		t.Errorf("ShortName without a short name = %q, want the type URL", got)
	}
}

// A redacted error hides its text, not its code or identity, and cannot be
// unwrapped to the text it hides.
func TestRedacted(t *testing.T) {
	hide := func(s string) string { return strings.ReplaceAll(s, "s3cret", "[redacted]") }
	sentinel := errors.New("sentinel")
	for _, tc := range []struct {
		err  error
		code codes.Code
	}{
		{fmt.Errorf("%w: dial user:s3cret@host", sentinel), codes.Unknown},
		{fmt.Errorf("%w: %w", sentinel, status.Error(codes.Unavailable, "address user:s3cret@host: too many colons")), codes.Unavailable},
	} {
		err := Redacted(tc.err, hide)
		if strings.Contains(err.Error(), "s3cret") || !strings.Contains(err.Error(), "[redacted]") {
			t.Errorf("Redacted(%q) = %q", tc.err, err)
		}
		if !errors.Is(err, sentinel) {
			t.Errorf("Redacted(%q) is not the error it wraps", tc.err)
		}
		if s, _ := status.FromError(err); s.Code() != tc.code || strings.Contains(s.Message(), "s3cret") {
			t.Errorf("status of Redacted(%q) = %v, want code %v and no secret", tc.err, s, tc.code)
		}
		if u := errors.Unwrap(err); u != nil {
			t.Errorf("Redacted(%q) unwraps to %q", tc.err, u)
		}
	}
	plain := errors.New("nothing to hide")
	if Redacted(plain, hide) != plain || Redacted(nil, hide) != nil {
		t.Error("an error with nothing to hide is not returned as it is")
	}
}
