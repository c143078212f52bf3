package transport_test

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/xdslens/xdslens/xdsclient/internal/transport"
	"github.com/xdslens/xdslens/xdsclient/internal/transport/transporttest"
)

// A script is a test's side of one Conn: the steps of a table row run in
// order on it, each against the stream the last accept opened.
type script struct {
	t  *testing.T
	r  *rig
	st *transporttest.Stream
}

// step is one step of a row.
type step func(s *script)

// run runs steps on a new rig.
func run(t *testing.T, delta bool, steps []step) {
	s := &script{t: t, r: newRig(t, delta)}
	for _, st := range steps {
		st(s)
	}
}

// sub subscribes names of typeURL.
func sub(typeURL string, names ...string) step {
	return func(s *script) { s.r.subscribe(typeURL, names...) }
}

// unsub unsubscribes names of typeURL.
func unsub(typeURL string, names ...string) step {
	return func(s *script) { s.r.unsubscribe(typeURL, names...) }
}

// accept lets the Conn's next stream open.
func accept() step {
	return func(s *script) {
		s.t.Helper()
		s.st = s.r.srv.Accept(s.t)
	}
}

// endStream ends the current stream from the server with err.
func endStream(err error) step {
	return func(s *script) { s.st.End(err) }
}

// versionsHeld makes the handler hold v of typeURL (delta's
// initial_resource_versions).
func versionsHeld(typeURL string, v map[string]string) step {
	return func(s *script) { s.r.h.setVersions(typeURL, v) }
}

// answer makes the handler answer the responses from now on with valid
// resources accepted and nack (if not empty) rejecting the others.
func answer(valid int, nack string) step {
	return func(s *script) {
		s.r.h.setResult(func(*transport.Update) transport.Result {
			res := transport.Result{Valid: valid}
			if nack != "" {
				res.NACK = errors.New(nack)
			}
			return res
		})
	}
}

// respond has the server send a response of typeURL carrying the clusters
// named, at version, with nonce; over delta each resource has version as
// its own, and removed are named in removed_resources.
func respond(typeURL, version, nonce string, names []string, removed ...string) step {
	return func(s *script) {
		s.t.Helper()
		if s.st.Delta {
			s.st.Respond(s.t, deltaResponse(typeURL, nonce, version, clusters(s.t, names...), names, removed...))
			return
		}
		s.st.Respond(s.t, sotwResponse(typeURL, version, nonce, clusters(s.t, names...)...))
	}
}

// sotw is a State of the World request as a row expects it.
type sotw struct {
	typeURL        string
	names          []string
	version, nonce string
	node           bool
	// nack is a part of the error_detail's message, "" for an ACK.
	nack string
}

// want reads the next State of the World request and compares it with w.
func want(w sotw) step {
	return func(s *script) {
		s.t.Helper()
		req := s.st.Request(s.t)
		got := sotw{typeURL: req.GetTypeUrl(), names: req.GetResourceNames(), version: req.GetVersionInfo(), nonce: req.GetResponseNonce(), node: req.GetNode() != nil, nack: w.nack}
		if !slices.Equal(got.names, w.names) || got.typeURL != w.typeURL || got.version != w.version || got.nonce != w.nonce || got.node != w.node {
			s.t.Fatalf("request %+v, want %+v", got, w)
		}
		checkDetail(s.t, req.GetErrorDetail().GetCode(), req.GetErrorDetail().GetMessage(), req.GetErrorDetail() != nil, w.nack)
		if w.node && req.GetNode().GetId() != "node-1" {
			s.t.Fatalf("request's node %v, want node-1", req.GetNode())
		}
	}
}

// delta is a delta request as a row expects it.
type delta struct {
	typeURL     string
	sub, unsub  []string
	versions    map[string]string
	nonce, nack string
	node        bool
}

// wantDelta reads the next delta request and compares it with w.
func wantDelta(w delta) step {
	return func(s *script) {
		s.t.Helper()
		req := s.st.DeltaRequest(s.t)
		got := delta{typeURL: req.GetTypeUrl(), sub: req.GetResourceNamesSubscribe(), unsub: req.GetResourceNamesUnsubscribe(),
			versions: req.GetInitialResourceVersions(), nonce: req.GetResponseNonce(), node: req.GetNode() != nil, nack: w.nack}
		if got.typeURL != w.typeURL || !slices.Equal(got.sub, w.sub) || !slices.Equal(got.unsub, w.unsub) || !maps.Equal(got.versions, w.versions) || got.nonce != w.nonce || got.node != w.node {
			s.t.Fatalf("delta request %+v, want %+v", got, w)
		}
		checkDetail(s.t, req.GetErrorDetail().GetCode(), req.GetErrorDetail().GetMessage(), req.GetErrorDetail() != nil, w.nack)
	}
}

// checkDetail checks a request's error_detail: none for an ACK (nack ""),
// else INVALID_ARGUMENT with nack in its message.
func checkDetail(t *testing.T, code int32, msg string, present bool, nack string) {
	t.Helper()
	switch {
	case nack == "" && present:
		t.Fatalf("error_detail %d %q in an ACK", code, msg)
	case nack != "" && (codes.Code(code) != codes.InvalidArgument || !strings.Contains(msg, nack)):
		t.Fatalf("error_detail %v %q, want INVALID_ARGUMENT with %q", codes.Code(code), msg, nack)
	}
}

// wantSending checks the handler's next Sending: the names the request
// subscribes for the first time on its stream, and whether it resumes.
func wantSending(typeURL string, resumed bool, names ...string) step {
	return func(s *script) {
		s.t.Helper()
		got := next(s.t, s.r.h.sendings, "Sending")
		if got.typeURL != typeURL || !slices.Equal(got.names, names) || got.resumed != resumed {
			s.t.Fatalf("Sending(%s, %v, resumed %v), want (%s, %v, resumed %v)", got.typeURL, got.names, got.resumed, typeURL, names, resumed)
		}
	}
}

// quiet checks that no request comes for a while: what a rule says must
// not be sent.
func quiet() step {
	return func(s *script) {
		s.t.Helper()
		s.st.NoRequest(s.t, 50*time.Millisecond)
	}
}

// unavailable is how a server's stream ends in the rows.
var unavailable = status.Error(codes.Unavailable, "server going away")
