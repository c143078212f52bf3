package transport_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/status"

	"github.com/xdslens/xdslens/xdsclient/bootstrap"
	"github.com/xdslens/xdslens/xdsclient/internal/health"
	"github.com/xdslens/xdslens/xdsclient/internal/transport"
)

// Flow control: the Conn reads the next response only once the watchers
// have taken the last (its Result's Wait is closed), and acknowledges each
// response at once, before they have.
func TestFlowControl(t *testing.T) {
	for _, delta := range []bool{false, true} {
		t.Run(map[bool]string{false: "sotw", true: "delta"}[delta], func(t *testing.T) {
			r := newRig(t, delta)
			taken := make(chan struct{})
			r.h.setResult(func(u *transport.Update) transport.Result {
				if u.Nonce == "n1" {
					return transport.Result{Valid: len(u.Resources), Wait: taken}
				}
				return transport.Result{Valid: len(u.Resources)}
			})
			r.subscribe(cdsURL, "a")
			s := &script{t: t, r: r, st: r.srv.Accept(t)}
			anyRequest(t, s.st)
			respond(cdsURL, "1", "n1", []string{"a"})(s)
			respond(cdsURL, "2", "n2", []string{"a"})(s)
			if got := next(t, r.h.responses, "Response").u.Nonce; got != "n1" {
				t.Fatalf("first response %q, want n1", got)
			}
			if req := anyRequest(t, s.st); req.nonce != "n1" {
				t.Fatalf("request after the first response: nonce %q, want the ACK of n1 before the watchers took it", req.nonce)
			}
			s.st.Holds(t, 1, 50*time.Millisecond)
			close(taken)
			if got := next(t, r.h.responses, "Response").u.Nonce; got != "n2" {
				t.Fatalf("second response %q, want n2", got)
			}
			if req := anyRequest(t, s.st); req.nonce != "n2" {
				t.Fatalf("request after the second response: nonce %q, want n2", req.nonce)
			}
		})
	}
}

// What ends a stream, and what it costs (gRFC A57: a stream that ended
// after a response is restarted at once; one that failed before any, or
// on a message too large, or on a keepalive timeout, waits the backoff),
// with the causes that a status alone does not make clear named.
func TestStreamEnd(t *testing.T) {
	const limit = 4 << 20
	for _, tc := range []struct {
		row       string
		respond   bool   // a response comes before the end
		malformed bool   // the response does not parse
		end       error  // how the server ends the stream
		maxSize   int    // the Conn's MaxResponseSize, limit if 0
		backoff   bool   // the next stream waits the backoff
		is        error  // End.Err wraps it
		says      string // End.Err says it
		cause     health.Cause
	}{
		{row: "no response, UNAVAILABLE: a failure", end: unavailable, backoff: true, says: "server going away"},
		{row: "a response, then UNAVAILABLE: restarted at once", respond: true, end: unavailable, says: "server going away"},
		{row: "a response, then OK: restarted at once", respond: true, end: nil, says: "EOF"},
		{row: "a response too large for the client", respond: true,
			end:     status.Error(codes.ResourceExhausted, "grpc: received message after decompression larger than max (5000 vs. 4194304)"),
			backoff: true, is: transport.ErrResponseTooLarge, says: "xdsclient.WithMaxResponseSize", cause: health.CauseResponseTooLarge},
		{row: "a request too large for the server, with its size", respond: true,
			end:     status.Error(codes.ResourceExhausted, "grpc: received message larger than max (5000 vs. 100)"),
			backoff: true, is: transport.ErrRequestTooLarge, says: "request of 5000 bytes, over its limit of 100", cause: health.CauseRequestTooLarge},
		{row: "a size refusal at the client's own limit is the client's", respond: true, maxSize: 100,
			end:     status.Error(codes.ResourceExhausted, "grpc: received message larger than max (5000 vs. 100)"),
			backoff: true, is: transport.ErrResponseTooLarge, says: "the limit is 100 bytes", cause: health.CauseResponseTooLarge},
		{row: "a request too large for a Java server", respond: true,
			end:     status.Error(codes.ResourceExhausted, "gRPC message exceeds maximum size 100: 5000"),
			backoff: true, is: transport.ErrRequestTooLarge, cause: health.CauseRequestTooLarge},
		{row: "RESOURCE_EXHAUSTED for another reason is no size refusal", respond: true,
			end:  status.Error(codes.ResourceExhausted, "quota"),
			says: "quota"},
		{row: "a keepalive timeout after a response: backoff", respond: true,
			end:     status.Error(codes.Unavailable, "keepalive ping failed to receive ACK within timeout"),
			backoff: true, is: transport.ErrKeepaliveTimeout, says: "keepalive time", cause: health.CauseKeepalive},
		{row: "a response that does not parse ends the stream, INTERNAL, before any response", malformed: true,
			backoff: true, says: "xDS stream: DiscoveryResponse"},
	} {
		t.Run(tc.row, func(t *testing.T) {
			size := limit
			if tc.maxSize != 0 {
				size = tc.maxSize
			}
			r := newRig(t, false, func(c *transport.Config) { c.MaxResponseSize = size })
			r.subscribe(cdsURL, "a")
			st := r.srv.Accept(t)
			if id := next(t, r.h.started, "StreamStarted"); id != 1 {
				t.Fatalf("first stream has id %d, want 1", id)
			}
			st.Request(t)
			switch {
			case tc.respond:
				st.Respond(t, sotwResponse(cdsURL, "1", "n1", clusters(t, "a")...))
				next(t, r.h.responses, "Response")
				st.Request(t)
			case tc.malformed:
				st.RespondBytes([]byte{0xff})
			}
			if tc.end != nil || !tc.malformed {
				st.End(tc.end)
			}
			e := next(t, r.h.ended, "StreamEnded")
			if e.id != 1 || !e.e.Started || e.e.Responded != tc.respond {
				t.Errorf("StreamEnded(%d, started %v, responded %v), want (1, true, %v)", e.id, e.e.Started, e.e.Responded, tc.respond)
			}
			if tc.is != nil && !errors.Is(e.e.Err, tc.is) {
				t.Errorf("End.Err %v, want it to wrap %v", e.e.Err, tc.is)
			}
			if e.e.Err == nil || !strings.Contains(e.e.Err.Error(), tc.says) {
				t.Errorf("End.Err %v, want it to say %q", e.e.Err, tc.says)
			}
			if got := transport.Cause(e.e.Err); got != tc.cause {
				t.Errorf("Cause %v, want %v", got, tc.cause)
			}
			if tc.malformed && status.Code(e.e.Err) != codes.Internal {
				t.Errorf("End.Err %v, want INTERNAL", e.e.Err)
			}
			backedOff := len(r.backoffs) > 0
			if backedOff != tc.backoff {
				t.Errorf("backoff asked for: %v, want %v", backedOff, tc.backoff)
			}
			// The next stream comes, and its first request subscribes
			// everything again.
			if got := r.srv.Accept(t).Request(t).GetResourceNames(); !slices.Equal(got, []string{"a"}) {
				t.Errorf("next stream's first request names %v, want [a]", got)
			}
			if id := next(t, r.h.started, "StreamStarted"); id != 2 {
				t.Errorf("second stream has id %d, want 2", id)
			}
		})
	}
}

// The backoff grows with each stream that fails before any response, and
// starts over once a stream has one (gRFC A57); each failure is told with
// the wait that follows it.
func TestBackoffAfterFailures(t *testing.T) {
	r := newRig(t, false)
	r.subscribe(cdsURL, "a")
	wantEnd := func(started, responded bool, backoff time.Duration) {
		t.Helper()
		e := next(t, r.h.ended, "StreamEnded")
		if e.e.Started != started || e.e.Responded != responded || e.e.Backoff != backoff {
			t.Fatalf("StreamEnded(started %v, responded %v, backoff %v), want (%v, %v, %v)", e.e.Started, e.e.Responded, e.e.Backoff, started, responded, backoff)
		}
		if !started && e.id != 0 {
			t.Fatalf("a stream that could not be made is told with id %d, want 0", e.id)
		}
	}
	wantRetry := func(n int) {
		t.Helper()
		if got := next(t, r.backoffs, "Backoff"); got != n {
			t.Fatalf("Backoff(%d), want Backoff(%d)", got, n)
		}
	}
	for i := range 3 {
		r.srv.Refuse(t, unavailable)
		wantRetry(i)
		wantEnd(false, false, time.Duration(i)*time.Millisecond)
	}
	st := r.srv.Accept(t)
	st.Request(t)
	st.End(unavailable)
	wantRetry(3)
	wantEnd(true, false, 3*time.Millisecond)

	st = r.srv.Accept(t)
	st.Request(t)
	st.Respond(t, sotwResponse(cdsURL, "1", "n1", clusters(t, "a")...))
	st.Request(t)
	st.End(unavailable)
	wantEnd(true, true, 0)
	if len(r.backoffs) != 0 {
		t.Fatalf("Backoff(%d) after a stream that had a response", <-r.backoffs)
	}
	r.srv.Refuse(t, unavailable)
	wantRetry(0)
	wantEnd(false, false, 0)
}

// Streams start at most once per MinStreamInterval, even when each ends
// right after a response (which alone asks for no backoff).
func TestMinStreamInterval(t *testing.T) {
	r := newRig(t, false, func(c *transport.Config) { c.MinStreamInterval = time.Hour })
	r.subscribe(cdsURL, "a")
	st := r.srv.Accept(t)
	st.Request(t)
	st.Respond(t, sotwResponse(cdsURL, "1", "n1", clusters(t, "a")...))
	st.Request(t)
	st.End(unavailable)
	if e := next(t, r.h.ended, "StreamEnded"); e.e.Backoff < 59*time.Minute {
		t.Fatalf("the next stream waits %v, want close to the hour of MinStreamInterval", e.e.Backoff)
	}
	r.srv.NoAttempt(t, 50*time.Millisecond)
}

// A stream is open only while something is subscribed: none before the
// first subscription, and none after a stream ends with nothing left.
func TestStreamOnlyWhileSubscribed(t *testing.T) {
	r := newRig(t, false)
	r.srv.NoAttempt(t, 50*time.Millisecond)
	r.subscribe(cdsURL, "a")
	st := r.srv.Accept(t)
	st.Request(t)
	r.unsubscribe(cdsURL, "a")
	if got := st.Request(t).GetResourceNames(); len(got) != 0 {
		t.Fatalf("request after the last unsubscription names %v, want none", got)
	}
	st.End(unavailable)
	next(t, r.h.ended, "StreamEnded")
	r.srv.NoAttempt(t, 50*time.Millisecond)
	r.subscribe(cdsURL, "b")
	if got := r.srv.Accept(t).Request(t).GetResourceNames(); !slices.Equal(got, []string{"b"}) {
		t.Fatalf("first request of the new stream names %v, want [b]", got)
	}
}

// The handler hears every connectivity state of the channel, in order,
// from the first; a stream's start is told after the states read before
// it, never followed by a state the channel left before the stream.
func TestConnectivity(t *testing.T) {
	r := newRig(t, false)
	if s := next(t, r.h.states, "first state"); s != connectivity.Idle {
		t.Fatalf("first state %v, want IDLE", s)
	}
	for _, s := range []connectivity.State{connectivity.Connecting, connectivity.TransientFailure, connectivity.Connecting} {
		r.srv.SetState(s)
		if got := next(t, r.h.states, s.String()); got != s {
			t.Fatalf("state %v, want %v", got, s)
		}
	}
	r.subscribe(cdsURL, "a")
	r.srv.Accept(t) // READY first, as gRPC
	next(t, r.h.started, "StreamStarted")
	if got := next(t, r.h.states, "READY"); got != connectivity.Ready {
		t.Fatalf("state after the stream's start %v, want READY", got)
	}
	r.srv.SetState(connectivity.Idle)
	if got := next(t, r.h.states, "IDLE"); got != connectivity.Idle {
		t.Fatalf("state %v, want IDLE", got)
	}
}

// Close ends the stream, closes the channel and ends the Conn's
// goroutines; the handler hears of no stream end after it.
func TestClose(t *testing.T) {
	r := newRig(t, false)
	r.subscribe(cdsURL, "a")
	st := r.srv.Accept(t)
	st.Request(t)
	r.close()
	st.WaitClosed(t)
	if made, open := r.srv.Dials(); made != 1 || open != 0 {
		t.Fatalf("%d channels made, %d open after Close; want 1, 0", made, open)
	}
	if len(r.h.ended) != 0 {
		t.Fatalf("StreamEnded %+v after Close", <-r.h.ended)
	}
}

// A channel that cannot be made fails New, with the dialer's error.
func TestDialFails(t *testing.T) {
	want := errors.New("no route")
	_, err := transport.New(t.Context(), transport.Config{Server: &bootstrap.ServerConfig{URI: "xds.test:443"},
		Dial: func(transport.Config) (transport.Channel, error) { return nil, want }}, newHandler())
	if !errors.Is(err, want) {
		t.Fatalf("New: %v, want %v", err, want)
	}
}

// Errors of a stream that quote the server's URI, or the address it
// names, are told with its credentials hidden.
func TestStreamEndRedacted(t *testing.T) {
	r := newRig(t, false, func(c *transport.Config) { c.Server = &bootstrap.ServerConfig{URI: "dns:///user:s3cret@xds.test:443"} })
	r.subscribe(cdsURL, "a")
	r.srv.Refuse(t, status.Error(codes.Unavailable, "cannot reach user:s3cret@xds.test:443"))
	e := next(t, r.h.ended, "StreamEnded")
	if e.e.Err == nil || strings.Contains(e.e.Err.Error(), "s3cret") || !strings.Contains(e.e.Err.Error(), bootstrap.Redacted) {
		t.Fatalf("End.Err %v, want the credentials redacted", e.e.Err)
	}
}

// Types are the subscribed types in the order of their rank; SentNames
// the names whose subscription went out on the current stream.
func TestTypesAndSentNames(t *testing.T) {
	for _, delta := range []bool{false, true} {
		t.Run(map[bool]string{false: "sotw", true: "delta"}[delta], func(t *testing.T) {
			r := newRig(t, delta)
			r.subscribe(edsURL, "e")
			r.subscribe(cdsURL, "b", "a")
			r.subscribe(ldsURL, "l")
			r.unsubscribe(ldsURL, "l")
			if got := r.conn.Types(); !slices.Equal(got, []string{cdsURL, edsURL}) {
				t.Fatalf("Types() = %v, want [cds eds]", got)
			}
			if got := r.sentNames(cdsURL); got != nil {
				t.Fatalf("SentNames before any stream: %v", got)
			}
			st := r.srv.Accept(t)
			anyRequest(t, st)
			anyRequest(t, st)
			got := r.sentNames(cdsURL)
			slices.Sort(got)
			if !slices.Equal(got, []string{"a", "b"}) {
				t.Fatalf("SentNames(cds) = %v, want [a b]", got)
			}
			if got := r.sentNames(ldsURL); got != nil {
				t.Fatalf("SentNames(lds) = %v, want none", got)
			}
		})
	}
}
