package xdstest_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdslens/xdslens/internal/testing/leaktest"
	"github.com/xdslens/xdslens/internal/testing/xdstest"
)

const (
	ldsType = "type.googleapis.com/envoy.config.listener.v3.Listener"
	rdsType = "type.googleapis.com/envoy.config.route.v3.RouteConfiguration"
	cdsType = "type.googleapis.com/envoy.config.cluster.v3.Cluster"
)

func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// dial connects to addr with a short reconnect backoff, so that a client
// finds a restarted server quickly.
func dial(t *testing.T, addr string) (*grpc.ClientConn, discoveryv3.AggregatedDiscoveryServiceClient) {
	t.Helper()
	cc, err := grpc.NewClient(addr,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: 10 * time.Millisecond, Multiplier: 1.6, MaxDelay: 50 * time.Millisecond},
			MinConnectTimeout: time.Second,
		}))
	if err != nil {
		t.Fatalf("grpc.NewClient(%q): %v", addr, err)
	}
	t.Cleanup(func() { cc.Close() })
	return cc, discoveryv3.NewAggregatedDiscoveryServiceClient(cc)
}

func openStream(t *testing.T, ctx context.Context, client discoveryv3.AggregatedDiscoveryServiceClient, opts ...grpc.CallOption) discoveryv3.AggregatedDiscoveryService_StreamAggregatedResourcesClient {
	t.Helper()
	cs, err := client.StreamAggregatedResources(ctx, opts...)
	if err != nil {
		t.Fatalf("StreamAggregatedResources: %v", err)
	}
	return cs
}

// nextStream returns the next stream srv accepts.
func nextStream(t *testing.T, ctx context.Context, srv *xdstest.ADSServer) *xdstest.Stream {
	t.Helper()
	st, err := srv.NextStream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func send(t *testing.T, cs discoveryv3.AggregatedDiscoveryService_StreamAggregatedResourcesClient, req *discoveryv3.DiscoveryRequest) {
	t.Helper()
	if err := cs.Send(req); err != nil {
		t.Fatalf("client Send: %v", err)
	}
}

func TestRoundTrip(t *testing.T) {
	ctx := testContext(t)
	srv := xdstest.NewADSServer(t)
	_, client := dial(t, srv.Addr())
	cs := openStream(t, ctx, client)
	send(t, cs, &discoveryv3.DiscoveryRequest{Node: &corev3.Node{Id: "n"}, TypeUrl: ldsType, ResourceNames: []string{"l"}})

	st := nextStream(t, ctx, srv)
	req, err := st.Recv(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if req.GetNode().GetId() != "n" || req.GetTypeUrl() != ldsType || len(req.GetResourceNames()) != 1 || req.GetResourceNames()[0] != "l" {
		t.Fatalf("server got %v, want LDS request for l from node n", req)
	}

	lis := &listenerv3.Listener{Name: "l"}
	if err := st.Send(xdstest.Response(ldsType, "1", lis)); err != nil {
		t.Fatal(err)
	}
	resp, err := cs.Recv()
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetVersionInfo() != "1" || resp.GetNonce() != "1" || len(resp.GetResources()) != 1 {
		t.Fatalf("client got %v, want version 1 nonce 1 with one resource", resp)
	}
	var got listenerv3.Listener
	if err := resp.GetResources()[0].UnmarshalTo(&got); err != nil || !proto.Equal(&got, lis) {
		t.Fatalf("resource = %v (%v), want %v", &got, err, lis)
	}

	send(t, cs, &discoveryv3.DiscoveryRequest{TypeUrl: ldsType, VersionInfo: "1", ResponseNonce: "1", ResourceNames: []string{"l"}})
	ack, err := st.RecvType(ctx, ldsType)
	if err != nil {
		t.Fatal(err)
	}
	if ack.GetVersionInfo() != "1" || ack.GetResponseNonce() != "1" {
		t.Errorf("ACK = %v, want version 1 nonce 1", ack)
	}
}

func TestNonceAutoFill(t *testing.T) {
	ctx := testContext(t)
	srv := xdstest.NewADSServer(t)
	_, client := dial(t, srv.Addr())
	cs := openStream(t, ctx, client)
	send(t, cs, &discoveryv3.DiscoveryRequest{TypeUrl: cdsType})
	st := nextStream(t, ctx, srv)

	resp := xdstest.Response(cdsType, "1", &clusterv3.Cluster{Name: "c"})
	explicit := xdstest.Response(cdsType, "2")
	explicit.Nonce = "mine"
	// The same message sent twice still gets a new nonce each time.
	for _, r := range []*discoveryv3.DiscoveryResponse{resp, resp, explicit, resp} {
		if err := st.Send(r); err != nil {
			t.Fatal(err)
		}
	}
	if resp.GetNonce() != "" {
		t.Errorf("Send changed the caller's response: nonce %q", resp.GetNonce())
	}
	if got := st.LastNonce(); got != "4" {
		t.Errorf("LastNonce = %q, want 4", got)
	}
	for _, want := range []string{"1", "2", "mine", "4"} {
		got, err := cs.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if got.GetNonce() != want {
			t.Errorf("nonce = %q, want %q", got.GetNonce(), want)
		}
	}
}

func TestRecvTypeKeepsOtherTypes(t *testing.T) {
	ctx := testContext(t)
	srv := xdstest.NewADSServer(t)
	_, client := dial(t, srv.Addr())
	cs := openStream(t, ctx, client)
	for _, typ := range []string{ldsType, cdsType, rdsType} {
		send(t, cs, &discoveryv3.DiscoveryRequest{TypeUrl: typ})
	}
	st := nextStream(t, ctx, srv)
	var got []string
	r, err := st.RecvType(ctx, cdsType)
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, r.GetTypeUrl())
	for range 2 {
		r, err := st.Recv(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, r.GetTypeUrl())
	}
	want := []string{cdsType, ldsType, rdsType}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("requests read = %q, want %q", got, want)
	}
}

func TestEnd(t *testing.T) {
	tests := []struct {
		name     string
		err      error
		wantCode codes.Code
		wantMsg  string
	}{
		{"unavailable", status.Error(codes.Unavailable, "going away"), codes.Unavailable, "going away"},
		{"permission denied", status.Error(codes.PermissionDenied, "no"), codes.PermissionDenied, "no"},
		{"plain error", errors.New("boom"), codes.Unknown, "boom"},
		{"ok", nil, codes.OK, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := testContext(t)
			srv := xdstest.NewADSServer(t)
			_, client := dial(t, srv.Addr())
			cs := openStream(t, ctx, client)
			send(t, cs, &discoveryv3.DiscoveryRequest{TypeUrl: ldsType})
			st := nextStream(t, ctx, srv)
			st.End(tt.err)
			select {
			case <-st.Done():
			default:
				t.Error("Done is open after End returned")
			}
			_, err := cs.Recv()
			if tt.wantCode == codes.OK {
				if !errors.Is(err, io.EOF) {
					t.Errorf("client Recv = %v, want io.EOF", err)
				}
			} else if s, _ := status.FromError(err); s.Code() != tt.wantCode || s.Message() != tt.wantMsg {
				t.Errorf("client Recv = %v, want %v %q", err, tt.wantCode, tt.wantMsg)
			}
			if err := st.Send(xdstest.Response(ldsType, "1")); err == nil {
				t.Error("Send after End succeeded")
			}
			st.End(nil) // ending again does nothing
		})
	}
}

func TestClientCancelEndsStream(t *testing.T) {
	ctx := testContext(t)
	srv := xdstest.NewADSServer(t)
	_, client := dial(t, srv.Addr())
	streamCtx, cancel := context.WithCancel(ctx)
	cs := openStream(t, streamCtx, client)
	send(t, cs, &discoveryv3.DiscoveryRequest{TypeUrl: ldsType})
	send(t, cs, &discoveryv3.DiscoveryRequest{TypeUrl: cdsType})
	st := nextStream(t, ctx, srv)
	// Requests arrive in order: once the CDS one is in, the LDS one is
	// buffered.
	if _, err := st.RecvType(ctx, cdsType); err != nil {
		t.Fatal(err)
	}
	cancel()
	select {
	case <-st.Done():
	case <-ctx.Done():
		t.Fatal("Done stayed open after the client cancelled")
	}
	// The buffered request is still readable, then the end is reported.
	if _, err := st.Recv(ctx); err != nil {
		t.Fatalf("first Recv = %v, want the buffered request", err)
	}
	if _, err := st.Recv(ctx); status.Code(err) != codes.Canceled {
		t.Errorf("second Recv = %v, want Canceled", err)
	}
}

func TestClientCloseSend(t *testing.T) {
	ctx := testContext(t)
	srv := xdstest.NewADSServer(t)
	_, client := dial(t, srv.Addr())
	cs := openStream(t, ctx, client)
	if err := cs.CloseSend(); err != nil {
		t.Fatal(err)
	}
	st := nextStream(t, ctx, srv)
	if _, err := st.Recv(ctx); !errors.Is(err, io.EOF) {
		t.Errorf("Recv = %v, want io.EOF", err)
	}
}

func TestStopAndRestart(t *testing.T) {
	ctx := testContext(t)
	srv := xdstest.NewADSServer(t)
	addr := srv.Addr()
	cc, client := dial(t, addr)
	cs := openStream(t, ctx, client)
	send(t, cs, &discoveryv3.DiscoveryRequest{TypeUrl: ldsType})
	first, err := srv.NextStream(ctx)
	if err != nil {
		t.Fatal(err)
	}

	srv.Stop()
	select {
	case <-first.Done():
	default:
		t.Error("stream is not over after Stop returned")
	}
	if _, err := cs.Recv(); status.Code(err) != codes.Unavailable {
		t.Errorf("client Recv after Stop = %v, want Unavailable", err)
	}
	for s := cc.GetState(); s != connectivity.TransientFailure; s = cc.GetState() {
		cc.Connect()
		if !cc.WaitForStateChange(ctx, s) {
			t.Fatalf("channel stayed %v, want TRANSIENT_FAILURE", s)
		}
	}
	if err := first.Send(xdstest.Response(ldsType, "1")); err == nil {
		t.Error("Send on a stream of a stopped server succeeded")
	}
	if g := leaktest.Left(ctx, "github.com/xdslens/xdslens/internal/testing/xdstest"); len(g) > 0 {
		t.Errorf("goroutines of package xdstest left after Stop:\n%s", strings.Join(g, "\n\n"))
	}
	srv.Stop() // stopping again does nothing

	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	if srv.Addr() != addr {
		t.Errorf("Addr after Restart = %s, want %s", srv.Addr(), addr)
	}
	if err := srv.Restart(); err == nil {
		t.Error("Restart of a running server succeeded")
	}
	cs2 := openStream(t, ctx, client, grpc.WaitForReady(true))
	send(t, cs2, &discoveryv3.DiscoveryRequest{TypeUrl: cdsType})
	second, err := srv.NextStream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if second == first {
		t.Fatal("NextStream returned the stream from before the stop")
	}
	if r, err := second.Recv(ctx); err != nil || r.GetTypeUrl() != cdsType {
		t.Fatalf("Recv on the new stream = %v, %v; want the CDS request", r, err)
	}
	if err := second.Send(xdstest.Response(cdsType, "1")); err != nil {
		t.Fatal(err)
	}
	if resp, err := cs2.Recv(); err != nil || resp.GetTypeUrl() != cdsType {
		t.Fatalf("client Recv on the new stream = %v, %v", resp, err)
	}
}

func TestSilence(t *testing.T) {
	ctx := testContext(t)
	srv := xdstest.NewADSServer(t)
	_, client := dial(t, srv.Addr())
	shortCtx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	cs := openStream(t, shortCtx, client)
	send(t, cs, &discoveryv3.DiscoveryRequest{TypeUrl: ldsType, ResourceNames: []string{"l"}})
	st := nextStream(t, ctx, srv)
	if _, err := st.Recv(ctx); err != nil {
		t.Fatal(err)
	}
	resp, err := cs.Recv()
	if status.Code(err) != codes.DeadlineExceeded {
		t.Errorf("client Recv = %v, %v; want no response and DeadlineExceeded", resp, err)
	}
}

func TestNextStreamWaitsForContext(t *testing.T) {
	srv := xdstest.NewADSServer(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if st, err := srv.NextStream(ctx); err == nil || !errors.Is(err, context.Canceled) {
		t.Errorf("NextStream = %v, %v; want context.Canceled", st, err)
	}
}

func TestResponse(t *testing.T) {
	garbage := &anypb.Any{TypeUrl: ldsType, Value: []byte{0xff, 0xff}}
	resp := xdstest.Response(ldsType, "3", &listenerv3.Listener{Name: "a"}, garbage)
	if resp.GetTypeUrl() != ldsType || resp.GetVersionInfo() != "3" || resp.GetNonce() != "" {
		t.Errorf("Response = %v", resp)
	}
	if len(resp.GetResources()) != 2 || resp.GetResources()[0].GetTypeUrl() != ldsType || resp.GetResources()[1] != garbage {
		t.Errorf("resources = %v, want the packed listener then the Any as given", resp.GetResources())
	}
}

func TestResourceError(t *testing.T) {
	re := xdstest.ResourceError("c", codes.NotFound, "gone")
	if re.GetResourceName().GetName() != "c" || re.GetErrorDetail().GetCode() != int32(codes.NotFound) || re.GetErrorDetail().GetMessage() != "gone" {
		t.Errorf("ResourceError = %v", re)
	}
}

func TestWaitForWakesOnNotify(t *testing.T) {
	ctx := testContext(t)
	var (
		mu    sync.Mutex
		ready bool
	)
	go func() {
		mu.Lock()
		ready = true
		mu.Unlock()
		xdstest.Notify()
	}()
	xdstest.WaitFor(t, ctx, "ready", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return ready
	})
}

func TestWaitForSeesServerEvents(t *testing.T) {
	ctx := testContext(t)
	srv := xdstest.NewADSServer(t)
	_, client := dial(t, srv.Addr())
	cs := openStream(t, ctx, client)
	send(t, cs, &discoveryv3.DiscoveryRequest{TypeUrl: ldsType})
	st := nextStream(t, ctx, srv)
	if err := cs.CloseSend(); err != nil {
		t.Fatal(err)
	}
	// The condition reads only the server, whose events wake WaitFor.
	var last error
	xdstest.WaitFor(t, ctx, "the client's side to end", func() bool {
		_, err := st.RecvType(ctx, rdsType) // no RDS request ever comes
		last = err
		return errors.Is(err, io.EOF)
	})
	if !errors.Is(last, io.EOF) {
		t.Errorf("last error = %v", last)
	}
}

// fakeTB records a fatal failure and ends the goroutine, as testing does.
type fakeTB struct {
	testing.TB
	msg string
}

func (f *fakeTB) Helper() {}

func (f *fakeTB) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func TestWaitForFailsWhenContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	tb := &fakeTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		xdstest.WaitFor(tb, ctx, "something that never happens", func() bool { return false })
	}()
	<-done
	if !strings.Contains(tb.msg, "something that never happens") {
		t.Errorf("failure message = %q, want it to name what was awaited", tb.msg)
	}
}

// TestADSServerPause checks that a paused server holds a client's new
// connection instead of refusing it: the channel stays CONNECTING, never
// TRANSIENT_FAILURE (where gRPC's reconnect backoff would start), and a
// stream started meanwhile is served once the server restarts.
func TestADSServerPause(t *testing.T) {
	ctx := xdstest.Context(t)
	srv := xdstest.NewADSServer(t)
	if err := srv.Pause(); err != nil {
		t.Fatal(err)
	}
	if err := srv.Pause(); err != nil {
		t.Fatalf("second Pause: %v", err)
	}
	cc, client := dial(t, srv.Addr())
	cc.Connect()
	for s := cc.GetState(); s != connectivity.Connecting; s = cc.GetState() {
		if !cc.WaitForStateChange(ctx, s) {
			t.Fatalf("channel stayed %v, want CONNECTING", s)
		}
	}
	// A refused connection fails within milliseconds: a held one does not
	// change state at all.
	hold, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	changed := cc.WaitForStateChange(hold, connectivity.Connecting)
	cancel()
	if changed {
		t.Fatalf("channel went from CONNECTING to %v while the server was paused, want it held", cc.GetState())
	}
	type result struct {
		cs  discoveryv3.AggregatedDiscoveryService_StreamAggregatedResourcesClient
		err error
	}
	opened := make(chan result, 1)
	go func() {
		cs, err := client.StreamAggregatedResources(ctx)
		opened <- result{cs, err}
	}()
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	r := <-opened
	if r.err != nil {
		t.Fatalf("stream started while paused: %v", r.err)
	}
	send(t, r.cs, &discoveryv3.DiscoveryRequest{TypeUrl: cdsType})
	if _, err := srv.NextStream(ctx); err != nil {
		t.Fatal(err)
	}
	if s := cc.GetState(); s != connectivity.Ready {
		t.Errorf("channel %v after the stream was served, want READY", s)
	}
}
