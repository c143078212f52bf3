package transporttest_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"go.uber.org/goleak"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/status"

	"github.com/xdslens/xdslens/internal/testing/testmain"
	"github.com/xdslens/xdslens/xdsclient/bootstrap"
	"github.com/xdslens/xdslens/xdsclient/internal/transport"
	"github.com/xdslens/xdslens/xdsclient/internal/transport/transporttest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, goleak.Cleanup(testmain.Exit)) }

const uri = "xds.test:443"

func dial(t *testing.T, n *transporttest.Network) transport.Channel {
	t.Helper()
	ch, err := n.Dial(transport.Config{Server: &bootstrap.ServerConfig{URI: uri}})
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

// open asks ch for a stream on its own goroutine and returns what
// NewStream returned.
func open(ctx context.Context, ch transport.Channel) <-chan error {
	done := make(chan error, 1)
	go func() {
		_, err := ch.NewStream(ctx, false)
		done <- err
	}()
	return done
}

// A channel behaves as a gRPC one where the tests rely on it: dials are
// counted and may be refused; a stream opens only on a READY channel (an
// accepted one makes it READY) and fails as the test says; a closed
// channel reports SHUTDOWN and opens no stream.
func TestChannel(t *testing.T) {
	var n transporttest.Network
	srv := n.Server(uri)
	srv.RefuseDials(errors.New("no route"))
	if _, err := n.Dial(transport.Config{Server: &bootstrap.ServerConfig{URI: uri}}); err == nil {
		t.Fatal("a dial refused succeeded")
	}
	srv.RefuseDials(nil)
	ch := dial(t, &n)
	if s := ch.State(); s != connectivity.Idle {
		t.Fatalf("a new channel is %v, want IDLE", s)
	}
	done := open(t.Context(), ch)
	srv.Refuse(t, status.Error(codes.Unavailable, "down"))
	if err := <-done; status.Code(err) != codes.Unavailable {
		t.Fatalf("a refused stream: %v, want UNAVAILABLE", err)
	}
	done = open(t.Context(), ch)
	srv.Accept(t)
	if err := <-done; err != nil {
		t.Fatalf("an accepted stream: %v", err)
	}
	if s := ch.State(); s != connectivity.Ready {
		t.Fatalf("a channel with a stream is %v, want READY", s)
	}
	changed := make(chan bool, 1)
	go func() { changed <- ch.WaitForStateChange(t.Context(), connectivity.Ready) }()
	srv.SetState(connectivity.TransientFailure)
	if !<-changed || ch.State() != connectivity.TransientFailure {
		t.Fatalf("WaitForStateChange did not see TRANSIENT_FAILURE")
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if ch.WaitForStateChange(ctx, connectivity.TransientFailure) {
		t.Fatal("WaitForStateChange reported a change once its context ended")
	}
	ch.Close()
	if made, open := srv.Dials(); made != 1 || open != 0 {
		t.Fatalf("%d made, %d open, want 1, 0", made, open)
	}
	if _, err := ch.NewStream(t.Context(), false); status.Code(err) != codes.Canceled || ch.State() != connectivity.Shutdown {
		t.Fatalf("a closed channel: NewStream %v, state %v; want CANCELED and SHUTDOWN", err, ch.State())
	}
}

// A stream carries what is sent serialized, delivers the responses queued
// before the server's end and then the end, refuses a send once ended,
// and ends with the client's context.
func TestStream(t *testing.T) {
	var n transporttest.Network
	ch := dial(t, &n)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var cs transport.Stream
	got := make(chan error, 1)
	go func() {
		var err error
		cs, err = ch.NewStream(ctx, false)
		got <- err
	}()
	st := n.Server(uri).Accept(t)
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	if err := cs.Send(&discoveryv3.DiscoveryRequest{TypeUrl: "t", ResourceNames: []string{"a"}}); err != nil {
		t.Fatal(err)
	}
	if req := st.Request(t); req.GetTypeUrl() != "t" || len(req.GetResourceNames()) != 1 {
		t.Fatalf("request read %v", req)
	}
	if err := cs.Send(&discoveryv3.DiscoveryRequest{TypeUrl: "\xff"}); status.Code(err) != codes.Internal {
		t.Fatalf("a request that does not marshal: %v, want INTERNAL", err)
	}
	st.NoRequest(t, 0)
	st.Respond(t, &discoveryv3.DiscoveryResponse{Nonce: "1"})
	st.End(status.Error(codes.Unavailable, "bye"))
	b, release, err := cs.Recv()
	if err != nil || len(b) == 0 {
		t.Fatalf("Recv: %x, %v; want the response queued before the end", b, err)
	}
	if got := st.Held(); got != 1 {
		t.Fatalf("%d responses held after Recv, want 1", got)
	}
	if _, _, err := cs.Recv(); status.Code(err) != codes.Unavailable {
		t.Fatalf("Recv after the end: %v, want UNAVAILABLE", err)
	}
	if err := cs.Send(&discoveryv3.DiscoveryRequest{}); err != io.EOF {
		t.Fatalf("Send after the end: %v, want io.EOF", err)
	}
	if n, reading := st.Taken(); n != 1 || reading {
		t.Fatalf("taken %d (reading %v), want 1, not reading", n, reading)
	}
	cancel()
	st.WaitClosed(t)
	release()
	st.WaitReleased(t)
}

// A response's bytes are the client's own copy until it releases them,
// which overwrites them (as gRPC reuses its buffer); a second release
// panics.
func TestRelease(t *testing.T) {
	var n transporttest.Network
	ch := dial(t, &n)
	var cs transport.Stream
	got := make(chan error, 1)
	go func() {
		var err error
		cs, err = ch.NewStream(t.Context(), false)
		got <- err
	}()
	st := n.Server(uri).Accept(t)
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	sent := []byte{0x22, 0x01, '1'} // nonce "1"
	st.RespondBytes(sent)
	st.RespondBytes([]byte{0x22, 0x01, '2'})
	b1, release1, err := cs.Recv()
	if err != nil {
		t.Fatal(err)
	}
	b2, release2, err := cs.Recv()
	if err != nil {
		t.Fatal(err)
	}
	if st.Held() != 2 {
		t.Fatalf("%d responses held, want 2", st.Held())
	}
	b1[0] = 0
	if sent[0] != 0x22 {
		t.Fatal("the bytes received are those the test queued, not a copy")
	}
	release1()
	if !bytes.Equal(b1, bytes.Repeat([]byte{transporttest.Released}, len(b1))) {
		t.Fatalf("released bytes %x, want them overwritten", b1)
	}
	if !bytes.Equal(b2, []byte{0x22, 0x01, '2'}) {
		t.Fatalf("the bytes held %x changed when another response was released", b2)
	}
	if st.Held() != 1 {
		t.Fatalf("%d responses held after a release, want 1", st.Held())
	}
	release2()
	st.WaitReleased(t)
	defer func() {
		if recover() == nil {
			t.Fatal("a second release did not panic")
		}
	}()
	release2()
}
