package xdsconfig

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestBound(t *testing.T) {
	for _, tc := range []struct {
		s    string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{strings.Repeat("a", 30), 20, strings.Repeat("a", 20-len(truncated)) + truncated},
	} {
		if got := bound(tc.s, tc.n); got != tc.want {
			t.Errorf("bound(%q, %d) = %q, want %q", tc.s, tc.n, got, tc.want)
		}
	}
	// A cut never splits a character.
	s := strings.Repeat("é", 100)
	for n := len(truncated); n < 60; n++ {
		got := bound(s, n)
		if len(got) > n || !utf8.ValidString(got) {
			t.Errorf("bound(é×100, %d) = %q (%d bytes)", n, got, len(got))
		}
	}
}

func TestResourceError(t *testing.T) {
	m := newMessages("node-1")
	cause := status.Error(codes.NotFound, `cds "c" from xDS server "s" (node ID "node-1"): does not exist`)
	err := m.resourceError("CDS", "c", cause, "")
	if got, want := err.Error(), `CDS resource "c": cds "c" from xDS server "s" (node ID "node-1"): does not exist`; got != want {
		t.Errorf("message %q, want %q", got, want)
	}
	if status.Code(err) != codes.Unavailable || err.CauseCode() != codes.NotFound || !errors.Is(err, cause) {
		t.Errorf("code %v cause code %v, is cause %v; want UNAVAILABLE, NOT_FOUND, true", status.Code(err), err.CauseCode(), errors.Is(err, cause))
	}
	own := m.resourceError("LDS", "l", nil, "not an API listener")
	if got, want := own.Error(), `LDS resource "l": not an API listener (node ID "node-1")`; got != want {
		t.Errorf("message %q, want %q", got, want)
	}
	if own.CauseCode() != codes.Unavailable {
		t.Errorf("cause code %v, want UNAVAILABLE", own.CauseCode())
	}
	huge := m.resourceError("RDS", "r", status.Error(codes.InvalidArgument, strings.Repeat("x", 1<<20)), "")
	if len(huge.Error()) > MaxMessageLen || !strings.Contains(huge.Error(), `node ID "node-1"`) {
		t.Errorf("a 1 MiB cause gives a message of %d bytes, naming the node: %v", len(huge.Error()), strings.Contains(huge.Error(), `node ID "node-1"`))
	}
}

func TestNote(t *testing.T) {
	m := newMessages("n")
	if got := m.note("", ""); got != "xDS node ID:n" {
		t.Errorf("empty note %q, want the node ID", got)
	}
	a, b := m.part("LDS", "l", "gone"), m.part("EDS", "e", "contains no localities")
	if got, want := m.note(a, "", b), `LDS resource "l": gone (node ID "n"); EDS resource "e": contains no localities (node ID "n")`; got != want {
		t.Errorf("note %q, want %q", got, want)
	}
	long := strings.Repeat("y", 1<<20)
	parts := []string{m.part("LDS", "l", long), m.part("RDS", "r", long), m.part("CDS", "c", long), m.part("EDS", "e", long), m.part("EDS", "e", long)}
	note := m.note(m.join(parts[0], parts[1]), parts[2], parts[3], parts[4])
	if len(note) > MaxMessageLen {
		t.Errorf("note of five 1 MiB errors is %d bytes", len(note))
	}
	for _, kind := range []string{"LDS", "RDS", "CDS", "EDS"} {
		if !strings.Contains(note, kind+" resource") {
			t.Errorf("bounded note lost the %s part", kind)
		}
	}
	if huge := newMessages(strings.Repeat("n", 1<<20)); len(huge.note()) > maxNodeIDLen+len("xDS node ID:") {
		t.Errorf("a 1 MiB node ID gives a note of %d bytes", len(huge.note()))
	}
}
