package xerr

import (
	"errors"
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
