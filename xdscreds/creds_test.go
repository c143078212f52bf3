package xdscreds_test

import (
	"context"
	"errors"
	"net"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/xdslens/xdslens/xdsclient/xdsresource/security"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/xdslens/xdslens/internal/handshake"
	"github.com/xdslens/xdslens/internal/testing/certtest"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/backends"
	"github.com/xdslens/xdslens/xdscreds"
)

// wantHandshakeFailure checks that err is an UNAVAILABLE status whose
// message names cluster "secure", the backend and the reason.
func wantHandshakeFailure(t *testing.T, err error, b *backend, reason string) {
	t.Helper()
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("RPC = %v, want UNAVAILABLE", err)
	}
	want := `xdscreds: cluster "secure": TLS handshake with ` + b.addr + ": "
	// The transport quotes the handshake's error in its status message.
	msg := strings.NewReplacer(`\"`, `"`, `\\`, `\`).Replace(status.Convert(err).Message())
	if !strings.Contains(msg, want) || !strings.Contains(msg, reason) {
		t.Fatalf("RPC failed with %q, want it to contain %q and %q", msg, want, reason)
	}
}

// TestTLS: roots from the cluster's root instance, no client certificate;
// the peer is TLS with the server's SPIFFE ID.
func TestTLS(t *testing.T) {
	_, store, b := rootsSetup(t)
	cc := dial(t, newCreds(t), b.addr, info(t, store, &security.Config{RootInstance: "roots"}))

	var pr peer.Peer
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{}, grpc.Peer(&pr)); err != nil {
		t.Fatalf("RPC over TLS: %v", err)
	}
	ti, ok := pr.AuthInfo.(credentials.TLSInfo)
	if !ok {
		t.Fatalf("peer AuthInfo is %T, want credentials.TLSInfo", pr.AuthInfo)
	}
	if ti.SecurityLevel != credentials.PrivacyAndIntegrity || ti.SPIFFEID == nil || ti.SPIFFEID.String() != "spiffe://example.org/ns/prod/sa/server" {
		t.Errorf("TLSInfo: level %v, SPIFFE ID %v; want PrivacyAndIntegrity and the server's", ti.SecurityLevel, ti.SPIFFEID)
	}
	if got := b.clientSerials(); len(got) != 0 {
		t.Errorf("the client showed certificates %v, want none (no identity instance)", got)
	}
	if got := b.serverNames(); !slices.Equal(got, []string{""}) {
		t.Errorf("server names sent: %q, want none (no sni)", got)
	}
}

// TestPeerSPIFFEID: the peer's SPIFFE ID follows gRPC C-core's rules
// (package certsan's table, which xDS-enabled servers apply too): none
// for a URI SAN whose path is "/", one for a URI SAN with an empty trust
// domain, which C-core does not check.
func TestPeerSPIFFEID(t *testing.T) {
	for _, tc := range []struct {
		uri  string
		want string // "" for none
	}{
		{"spiffe://example.org/", ""},
		{"spiffe:///ns/prod", "spiffe:///ns/prod"},
		{"spiffe://example.org/ns/prod", "spiffe://example.org/ns/prod"},
	} {
		ca := certtest.NewCA(t, "ca")
		store := newStore(t, time.Hour, map[string]*certtest.Files{"roots": certtest.WriteFiles(t, nil, ca)})
		b := startTLS(t, backendConfig{cert: ca.Issue(t, certtest.Names{CommonName: "server", IPs: []string{"127.0.0.1"}, URIs: []string{tc.uri}})})
		cc := dial(t, newCreds(t), b.addr, info(t, store, &security.Config{RootInstance: "roots"}))
		var pr peer.Peer
		if _, err := healthpb.NewHealthClient(cc).Check(t.Context(), &healthpb.HealthCheckRequest{}, grpc.Peer(&pr)); err != nil {
			t.Fatalf("%s: RPC over TLS: %v", tc.uri, err)
		}
		ti, ok := pr.AuthInfo.(credentials.TLSInfo)
		if !ok {
			t.Fatalf("%s: peer AuthInfo is %T, want credentials.TLSInfo", tc.uri, pr.AuthInfo)
		}
		if got := ti.SPIFFEID; tc.want == "" && got != nil || tc.want != "" && (got == nil || got.String() != tc.want) {
			t.Errorf("URI SAN %q: SPIFFE ID %v, want %q", tc.uri, got, tc.want)
		}
	}
}

// TestMutualTLS: the client shows the certificate of its identity
// instance; without one, a server that requires it refuses the client.
func TestMutualTLS(t *testing.T) {
	p := newPKI(t, "ca")
	store := newStore(t, time.Hour, map[string]*certtest.Files{"mesh": certtest.WriteFiles(t, p.client, p.ca)})
	b := startTLS(t, backendConfig{cert: p.server, clientCAs: p.ca.Pool()})

	cc := dial(t, newCreds(t), b.addr, info(t, store, &security.Config{IdentityInstance: "mesh", RootInstance: "mesh"}))
	if err := check(t, cc); err != nil {
		t.Fatalf("RPC over mTLS: %v", err)
	}
	if got, want := b.clientSerials(), []string{p.client.Cert.SerialNumber.String()}; !slices.Equal(got, want) {
		t.Errorf("client certificates seen by the server: %v, want %v", got, want)
	}

	// Without an identity instance, no certificate is shown, and the
	// server refuses the client (after the client's side of a TLS 1.3
	// handshake has ended, so the error is the server's alert).
	tlsOnly := dial(t, newCreds(t), b.addr, info(t, store, &security.Config{RootInstance: "mesh"}))
	if err := check(t, tlsOnly); status.Code(err) != codes.Unavailable {
		t.Fatalf("RPC without a client certificate to a server that requires one = %v, want UNAVAILABLE", err)
	}
	if n := b.handshakes.Load(); n != 1 {
		t.Errorf("the server completed %d handshakes, want 1 (the mTLS one)", n)
	}
}

// TestPlaintextBackendRefused: a cluster that asks for TLS never reaches
// a plaintext backend.
func TestPlaintextBackendRefused(t *testing.T) {
	p := newPKI(t, "ca")
	store := newStore(t, time.Hour, map[string]*certtest.Files{"roots": certtest.WriteFiles(t, nil, p.ca)})
	b := startPlaintext(t)
	cc := dial(t, newCreds(t), b.addr, info(t, store, &security.Config{RootInstance: "roots"}))
	wantHandshakeFailure(t, check(t, cc), b, "first record does not look like a TLS handshake")
}

// TestFallback: an address without an Info takes the fallback
// credentials; with insecure ones, a plaintext backend answers.
func TestFallback(t *testing.T) {
	b := startPlaintext(t)
	if err := check(t, dial(t, newCreds(t), b.addr, nil)); err != nil {
		t.Fatalf("RPC through the fallback credentials: %v", err)
	}
	if _, err := xdscreds.NewClientCredentials(xdscreds.ClientOptions{}); err == nil || !strings.Contains(err.Error(), "FallbackCreds") {
		t.Errorf("NewClientCredentials without fallback = %v, want an error naming FallbackCreds", err)
	}
}

// TestUntrustedServer: a server whose certificate another CA signed is
// refused, naming the roots it was checked against.
func TestUntrustedServer(t *testing.T) {
	p, other := newPKI(t, "ca"), newPKI(t, "other-ca")
	store := newStore(t, time.Hour, map[string]*certtest.Files{"roots": certtest.WriteFiles(t, nil, p.ca)})
	b := startTLS(t, backendConfig{cert: other.server})
	cc := dial(t, newCreds(t), b.addr, info(t, store, &security.Config{RootInstance: "roots"}))
	wantHandshakeFailure(t, check(t, cc), b, `does not verify against the roots of certificate provider instance "roots": x509: certificate signed by unknown authority`)
}

// TestNoRootsNeverSystemRoots: a root instance whose provider gives no
// roots fails the handshake; the system's roots are not taken instead.
func TestNoRootsNeverSystemRoots(t *testing.T) {
	p := newPKI(t, "ca")
	store := newStore(t, time.Hour, map[string]*certtest.Files{"identity-only": certtest.WriteFiles(t, p.client, nil)})
	b := startTLS(t, backendConfig{cert: p.server})
	cc := dial(t, newCreds(t), b.addr, info(t, store, &security.Config{RootInstance: "identity-only"}))
	wantHandshakeFailure(t, check(t, cc), b, `roots: certificate provider instance "identity-only" gives no root certificates`)
	if n := b.handshakes.Load(); n != 0 {
		t.Errorf("the server completed %d handshakes, want none", n)
	}

	missing := dial(t, newCreds(t), b.addr, info(t, store, &security.Config{RootInstance: "not-in-bootstrap"}))
	wantHandshakeFailure(t, check(t, missing), b, `certificate provider instance "not-in-bootstrap" is not in the bootstrap's certificate_providers`)

	noSettings := dial(t, newCreds(t), b.addr, info(t, store, nil))
	wantHandshakeFailure(t, check(t, noSettings), b, "TLS settings are incomplete")
}

// TestNoALPN: a TLS server that does not agree to h2 is refused.
func TestNoALPN(t *testing.T) {
	p := newPKI(t, "ca")
	store := newStore(t, time.Hour, map[string]*certtest.Files{"roots": certtest.WriteFiles(t, nil, p.ca)})
	b := startTLS(t, backendConfig{cert: p.server, raw: true, noALPN: true})
	cc := dial(t, newCreds(t), b.addr, info(t, store, &security.Config{RootInstance: "roots"}))
	wantHandshakeFailure(t, check(t, cc), b, `the server did not agree to ALPN protocol "h2"`)
}

// TestHandshakeDeadline: a peer that never answers fails the handshake
// when the channel's connect deadline passes, with the error naming the
// cluster.
func TestHandshakeDeadline(t *testing.T) {
	p := newPKI(t, "ca")
	store := newStore(t, time.Hour, map[string]*certtest.Files{"roots": certtest.WriteFiles(t, nil, p.ca)})
	hole, err := backends.StartBlackhole()
	if err != nil {
		t.Fatal(err)
	}
	defer hole.Close()
	cc := dial(t, newCreds(t), hole.Addr(), info(t, store, &security.Config{RootInstance: "roots"}),
		grpc.WithConnectParams(grpc.ConnectParams{MinConnectTimeout: 100 * time.Millisecond}))
	wantHandshakeFailure(t, check(t, cc), &backend{addr: hole.Addr()}, "context deadline exceeded")
}

// TestCredentialsInterface: the parts of TransportCredentials a channel
// calls besides ClientHandshake.
func TestCredentialsInterface(t *testing.T) {
	creds := newCreds(t)
	if !handshake.Applies(creds) {
		t.Error("the credentials do not apply cluster security")
	}
	clone := creds.Clone()
	if !handshake.Applies(clone) || clone == creds {
		t.Errorf("Clone = %v, want other credentials that apply cluster security", clone)
	}
	if got := creds.Info().SecurityProtocol; got != "tls" {
		t.Errorf("Info().SecurityProtocol = %q, want tls", got)
	}
	if err := creds.OverrideServerName("x"); err == nil {
		t.Error("OverrideServerName succeeded; the server name is the cluster's")
	}
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	if _, _, err := creds.ServerHandshake(a); err == nil || !strings.Contains(err.Error(), "client credentials") {
		t.Errorf("ServerHandshake = %v, want an error saying these are client credentials", err)
	}
	if handshake.Applies(insecure.NewCredentials()) {
		t.Error("insecure credentials apply cluster security")
	}
}

// TestSyscallConn: the connection made keeps the TCP connection's
// syscall.Conn, which channelz reads socket options from.
func TestSyscallConn(t *testing.T) {
	p := newPKI(t, "ca")
	store := newStore(t, time.Hour, map[string]*certtest.Files{"roots": certtest.WriteFiles(t, nil, p.ca)})
	b := startTLS(t, backendConfig{cert: p.server, raw: true})
	raw, err := net.Dial("tcp", b.addr)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := xdscreds.HandshakeWith(ctx, info(t, store, &security.Config{RootInstance: "roots"}), raw)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	sc, ok := conn.(syscall.Conn)
	if !ok {
		t.Fatalf("the connection (%T) is not a syscall.Conn", conn)
	}
	if _, err := sc.SyscallConn(); err != nil {
		t.Errorf("SyscallConn: %v", err)
	}
}

// closingConn is a connection that another closes when its handshake's
// context ends, as gRPC closes one at its connect deadline: a read ends
// the context, then fails as on a closed connection. Writes are dropped.
type closingConn struct {
	net.Conn
	cancel context.CancelFunc
}

func (c closingConn) Read([]byte) (int, error) {
	c.cancel()
	return 0, net.ErrClosed
}

func (c closingConn) Write(b []byte) (int, error) { return len(b), nil }

// opaqueCtx is a context that the context package does not know for one
// of its own: what waits for its end (context.AfterFunc, which the TLS
// stack uses) learns of it on a goroutine of its own, later, as gRPC's
// handshakes may learn of their connect deadline after the connection
// was closed for it.
type opaqueCtx struct{ context.Context }

func (opaqueCtx) Value(any) any { return nil }

// TestHandshakeClosedAtDeadline: a handshake whose connection is closed
// because its context ended fails with the context's error, whichever of
// the two the TLS stack sees first.
func TestHandshakeClosedAtDeadline(t *testing.T) {
	p := newPKI(t, "ca")
	store := newStore(t, time.Hour, map[string]*certtest.Files{"roots": certtest.WriteFiles(t, nil, p.ca)})
	for range 100 {
		a, b := net.Pipe()
		ctx, cancel := context.WithCancel(context.Background())
		_, err := xdscreds.HandshakeWith(opaqueCtx{ctx}, info(t, store, &security.Config{RootInstance: "roots"}), closingConn{Conn: a, cancel: cancel})
		cancel()
		a.Close()
		b.Close()
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("handshake = %v, want the context's error", err)
		}
	}
}
