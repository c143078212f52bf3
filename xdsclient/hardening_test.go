package xdsclient_test

// What a network or a control plane can do to the client: a connection that
// goes silent, a response over the size limit, a response of many invalid
// resources.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/xdslens/xdslens/internal/testing/xdstest"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/controlplane"
	"github.com/xdslens/xdslens/xdsclient"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
)

// A connection that stops carrying anything (a half-open TCP connection, a
// silent network) is found by the HTTP/2 keepalive and is a server failure
// (gRFC A57), though its stream had responses: the watcher hears of it as an
// ambient error, and the error ends when the server answers again.
func TestKeepaliveFindsASilentConnection(t *testing.T) {
	t.Parallel()
	srv := xdstest.NewADSServer(t)
	proxy := xdstest.NewProxy(t, srv.Addr())
	hooks := newRecordedHooks()
	c := newClient(t, bootstrapFor(t, proxy.Addr()), xdsclient.WithHooks(hooks.hooks()),
		xdsclient.WithKeepalive(xdsclient.MinKeepaliveTime, 300*time.Millisecond))
	// gRPC's shortest keepalive interval is 10s: the ping goes out 10-20s
	// after the connection falls silent.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s := xdstest.Script{T: t, Ctx: ctx, Srv: srv}
	rec, st := s.WatchCluster(c, "c1")
	s.Send(st, xdstest.Response(cdsURL, "1", controlplane.Cluster("c1", "c1")))
	rec.Expect(t, xdsclient.NotifyResource, 0)
	s.RecvType(st, cdsURL)

	proxy.Stall()
	e := rec.NextWithin(t, 45*time.Second)
	if e.Kind != xdsclient.NotifyAmbientError || status.Code(e.Err) != codes.Unavailable {
		t.Fatalf("got %v, want an ambient UNAVAILABLE", e)
	}
	if f := hooks.failures.snapshot(); len(f) == 0 || !errors.Is(f[0].Reason, xdsclient.ErrKeepaliveTimeout) {
		t.Errorf("server failures %+v, want one caused by ErrKeepaliveTimeout", f)
	}
	if !contains(e.Err, "keepalive") {
		t.Errorf("ambient error %v does not say a keepalive ping went unanswered", e.Err)
	}
	proxy.Resume()
	st2 := s.NextStream()
	s.RecvType(st2, cdsURL)
	s.Send(st2, xdstest.Response(cdsURL, "1", controlplane.Cluster("c1", "c1")))
	expectCleared(t, rec)
}

// A response over the size limit fails its stream with an error that names
// the limit; the default limit takes a response far over gRPC's 4 MiB.
func TestResponseSizeLimit(t *testing.T) {
	t.Parallel()
	big := controlplane.Cluster("c1", strings.Repeat("e", 2048))
	f := newFixture(t, nil, xdsclient.WithMaxResponseSize(1024))
	rec, st := f.WatchCluster(f.c, "c1")
	f.send(st, cdsURL, "1", big)
	e := rec.Expect(t, xdsclient.NotifyResourceError, codes.Unavailable)
	for _, want := range []string{"larger than the client accepts", "1024 bytes", "WithMaxResponseSize"} {
		if !contains(e.Err, want) {
			t.Errorf("error %v does not say %q", e.Err, want)
		}
	}
	if contains(e.Err, "server refused") {
		t.Errorf("error %v says the server refused a request", e.Err)
	}
	end := f.hooks.ended.waitFor(t, "the stream's end", func(xdsclient.StreamEndInfo) bool { return true })
	if !errors.Is(end.Err, xdsclient.ErrResponseTooLarge) || errors.Is(end.Err, xdsclient.ErrRequestTooLarge) {
		t.Errorf("StreamEnded error %v is not ErrResponseTooLarge alone", end.Err)
	}

	// A response of 6 MB (as large as 70,000 ordinary clusters, here
	// 6,000 with long service names, which decode faster): received.
	g := newFixture(t, nil)
	w, gst := g.WatchCluster(g.c, "c0")
	var clusters []proto.Message
	for i := range 6000 {
		clusters = append(clusters, controlplane.Cluster(fmt.Sprint("c", i), fmt.Sprint(i, strings.Repeat("-", 1000))))
	}
	resp := xdstest.Response(cdsURL, "1", clusters...)
	if n := proto.Size(resp); n < 4<<20 {
		t.Fatalf("the response is %d bytes, not over gRPC's 4 MiB default", n)
	}
	g.Send(gst, resp)
	w.Expect(t, xdsclient.NotifyResource, 0)
}

// A response of many invalid resources gets a bounded NACK: the first
// errors and a count of the others, small enough for any server to read,
// so the stream stays up; each subscribed entry keeps its own full error.
func TestNACKIsBounded(t *testing.T) {
	f := newFixture(t, nil)
	const named, garbage = 100, 20_000
	var watchers []*xdstest.Watcher
	for i := range named {
		w := xdstest.NewWatcher()
		watchers = append(watchers, w)
		defer f.c.Watch(xdsresource.ClusterType, fmt.Sprint("c", i), w)()
	}
	st := f.NextStream()
	for {
		if req := f.RecvType(st, cdsURL); len(req.GetResourceNames()) == named {
			break
		}
	}
	resp := xdstest.Response(cdsURL, "1")
	for i := range named {
		bad := xdstest.InvalidCluster(fmt.Sprint("c", i))
		bad.ConnectTimeout = durationpb.New(time.Duration(i+1) * time.Second)
		a, err := anypb.New(bad)
		if err != nil {
			t.Fatal(err)
		}
		resp.Resources = append(resp.Resources, a)
	}
	for range garbage {
		resp.Resources = append(resp.Resources, &anypb.Any{TypeUrl: cdsURL, Value: []byte{0xff}})
	}
	f.Send(st, resp)
	for _, w := range watchers {
		w.Expect(t, xdsclient.NotifyResourceError, codes.InvalidArgument)
	}
	nack := f.RecvType(st, cdsURL)
	msg := nack.GetErrorDetail().GetMessage()
	if len(msg) > 17<<10 {
		t.Fatalf("NACK error_detail is %d bytes, want at most about 16 KiB", len(msg))
	}
	if !strings.Contains(msg, fmt.Sprintf("and %d more invalid", named+garbage-50)) {
		t.Errorf("NACK does not count the errors it leaves out: ...%s", msg[max(0, len(msg)-200):])
	}
	for i, s := range f.c.Dump() {
		if s.Err == nil || !contains(s.Err, `"`+s.Name+`"`) || s.State != xdsclient.StateNACKed {
			t.Fatalf("entry %d %q: state %v error %v, want NACKED with its own error", i, s.Name, s.State, s.Err)
		}
	}
	// The stream is still up: the next response arrives on it.
	f.send(st, cdsURL, "2", controlplane.Cluster("c0", "c0"))
	watchers[0].Expect(t, xdsclient.NotifyResource, 0)
	if n := len(f.hooks.started.snapshot()); n != 1 {
		t.Errorf("%d streams started, want 1: the NACK ended the stream", n)
	}
}

// Settings a client cannot honour are refused, naming the setting and why.
func TestTransportOptionErrors(t *testing.T) {
	cfg := bootstrapFor(t, "127.0.0.1:1")
	for _, tc := range []struct {
		opt  xdsclient.Option
		want string
	}{
		{xdsclient.WithKeepalive(time.Second, time.Second), "keepalive time 1s: must be at least 10s"},
		{xdsclient.WithKeepalive(time.Minute, 0), "keepalive timeout 0s: must be positive"},
		{xdsclient.WithMaxResponseSize(0), "max response size 0: must be positive"},
		{xdsclient.WithMinStreamInterval(-time.Second), "min stream interval -1s: must not be negative"},
	} {
		if _, err := xdsclient.New(cfg, tc.opt); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New: %v, want an error saying %q", err, tc.want)
		}
	}
}

// A request the server refuses as too large is told apart from a response
// the client refuses (TestResponseSizeLimit): the error says the server
// refused the client's request, with its size and the server's limit.
// Requests grow with the subscription, not with one caller's name
// (MaxResourceNameSize): here twenty long names and a server that takes
// 64 KiB.
func TestRequestTooLargeForTheServer(t *testing.T) {
	srv := xdstest.NewADSServer(t, grpc.MaxRecvMsgSize(64<<10))
	hooks := newRecordedHooks()
	c := newClient(t, bootstrapFor(t, srv.Addr()), xdsclient.WithHooks(hooks.hooks()))
	s := xdstest.Script{T: t, Ctx: xdstest.Context(t), Srv: srv}
	var recs []*xdstest.Watcher
	for i := range 20 {
		rec := xdstest.NewWatcher()
		recs = append(recs, rec)
		defer c.Watch(xdsresource.ClusterType, fmt.Sprintf("c%d-%s", i, strings.Repeat("n", 4000)), rec)()
	}
	st := s.NextStream()
	// The server reads requests until one is over its limit, and ends the
	// stream with the reason, as a gRPC server does.
	var err error
	for err == nil {
		_, err = st.RecvType(s.Ctx, cdsURL)
	}
	if status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("the server read the requests until %v, want RESOURCE_EXHAUSTED", err)
	}
	st.End(err)
	e := recs[0].Expect(t, xdsclient.NotifyResourceError, codes.Unavailable)
	msg := status.Convert(e.Err).Message()
	msg = msg[strings.LastIndex(msg, `"`)+1:] // after the resource's long name
	for _, want := range []string{"larger than the server accepts", "the server refused a request of", "over its limit of 65536"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error ...%s does not say %q", msg, want)
		}
	}
	if strings.Contains(msg, "larger than the client accepts") || strings.Contains(msg, "WithMaxResponseSize") {
		t.Errorf("error ...%s blames the response size limit", msg)
	}
	end := hooks.ended.waitFor(t, "the stream's end", func(xdsclient.StreamEndInfo) bool { return true })
	if !errors.Is(end.Err, xdsclient.ErrRequestTooLarge) || errors.Is(end.Err, xdsclient.ErrResponseTooLarge) {
		t.Errorf("StreamEnded error %v is not ErrRequestTooLarge alone", end.Err)
	}
}

// What a server supplies is cut before it reaches an error, a log line or
// a cache entry's error: a stream status of 1 MiB, a version_info of
// 3 MiB, a TP3 message of 3 MiB. No message is over 16 KiB, each keeps
// the cause that follows the cut string and says how much was cut.
func TestServerStringsAreBounded(t *testing.T) {
	t.Parallel()
	var logs xdstest.SyncBuffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	f := newFixture(t, nil, xdsclient.WithLogger(logger))
	huge := strings.Repeat("v", 3<<20)
	rec, st := f.WatchCluster(f.c, "c1")
	st.End(status.Error(codes.Unavailable, strings.Repeat("s", 1<<20)))
	e := rec.Expect(t, xdsclient.NotifyResourceError, codes.Unavailable)
	checkBounded(t, e.Err, "failed before any response")

	st = f.NextStream()
	f.RecvType(st, cdsURL)
	f.send(st, cdsURL, huge, xdstest.InvalidCluster("c1"))
	e = rec.Expect(t, xdsclient.NotifyResourceError, codes.InvalidArgument)
	checkBounded(t, e.Err, "unsupported cluster type STATIC")
	checkBounded(t, f.entry(cdsURL, "c1").Err, "unsupported cluster type STATIC")
	if nack := f.RecvType(st, cdsURL); len(nack.GetErrorDetail().GetMessage()) > maxMessage {
		t.Errorf("NACK error_detail of %d bytes", len(nack.GetErrorDetail().GetMessage()))
	}

	f.Send(st, xdstest.ErrorResponse(cdsURL, huge, xdstest.ResourceError("c1", codes.PermissionDenied, huge+" the end")))
	e = rec.Expect(t, xdsclient.NotifyResourceError, codes.PermissionDenied)
	checkBounded(t, e.Err, "control plane reported PermissionDenied")
	for line := range strings.Lines(logs.String()) {
		if len(line) > maxMessage {
			t.Errorf("log line of %d bytes: %.200s", len(line), line)
		}
	}
}

// checkBounded fails t unless err's message is at most 16 KiB, valid
// UTF-8, says cause, and marks a cut.
func checkBounded(t *testing.T, err error, cause string) {
	t.Helper()
	msg := status.Convert(err).Message()
	checkMessage(t, msg)
	if !strings.Contains(msg, cause) || !strings.Contains(msg, " more bytes]") {
		t.Errorf("error %.300q...%.300q does not say %q and mark the cut", msg, msg[max(0, len(msg)-300):], cause)
	}
}

// A server that ends every stream right after one response gets at most
// one new stream per WithMinStreamInterval, sustained; gRFC A57 alone
// restarts each at once, which made such a server (or a proxy in front of
// it) get over a thousand streams a second. The wait is StreamEnded's
// Backoff.
func TestStreamRestartsAreSpaced(t *testing.T) {
	t.Parallel()
	forEachProtocol(t, func(t *testing.T, p protocol) {
		// An interval well above a stream's life on a loaded machine (about
		// 200ms seen under a fresh clone's whole test run), so that short
		// streams wait.
		const interval, window = 250 * time.Millisecond, time.Second
		f := p.fixture(t, nil, xdsclient.WithMinStreamInterval(interval))
		// waited counts the restarts that waited out the rest of their
		// interval: those of short streams (one that lived longer, on a
		// slow machine, is restarted at once).
		waited := func() int {
			n := 0
			for _, end := range f.hooks.ended.snapshot() {
				if end.Backoff > 0 {
					n++
				}
			}
			return n
		}
		ctx := xdstest.Context(t)
		start := time.Now() // before the first stream starts
		_, w, _ := p.watch(f, "c1")
		streams, lastStart := 1, time.Duration(0)
		for {
			w.send("1", controlplane.Cluster("c1", "c1"))
			w.end(nil)
			// The window, and past it until a restart has waited: on a
			// loaded machine streams can outlive the interval.
			if time.Since(start) >= window && waited() > 0 {
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("%d streams in %v, and no restart waited: StreamEnded's Backoff does not show the interval", streams, time.Since(start))
			}
			w = p.next(f)
			w.recv()
			streams++
			lastStart = time.Since(start) // at or after the stream's start
		}
		t.Logf("%d streams in %v", streams, time.Since(start))
		// Stream k starts at least k-1 intervals after start.
		if most := int(lastStart/interval) + 1; streams > most {
			t.Errorf("%d streams, the last at most %v after the first, want at most %d (one per %v)", streams, lastStart, most, interval)
		}
		for _, end := range f.hooks.ended.snapshot() {
			if end.Backoff > interval {
				t.Errorf("a stream that ended after a response: restart after %v, want at most %v", end.Backoff, interval)
			}
		}
	})
}

// A stream that lived longer than the interval is restarted at once after
// it ends (gRFC A57): the interval holds back only streams that end as
// soon as they start.
func TestLongLivedStreamRestartsAtOnce(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, p protocol) {
		const interval = 50 * time.Millisecond
		f := p.fixture(t, nil, xdsclient.WithMinStreamInterval(interval))
		rec, w := p.cached(f, "c1")
		<-time.After(interval) // the stream has now lived longer than the interval
		w.end(nil)
		end := f.hooks.ended.waitFor(t, "the stream's end", func(xdsclient.StreamEndInfo) bool { return true })
		if !end.ResponseReceived || end.Backoff != 0 {
			t.Errorf("stream end %+v: want a restart at once after a stream with a response", end)
		}
		w = p.next(f)
		w.recv()
		rec.ExpectNone(t)
	})
}
