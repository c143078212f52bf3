package xdsserver_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"

	"github.com/xdslens/xdslens/internal/testing/certtest"
	"github.com/xdslens/xdslens/internal/testing/servertest"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/serverres"
	"github.com/xdslens/xdslens/xdsserver"
)

// tlsServer serves one chain with tls (nil: plaintext).
func tlsServer(t *testing.T, env *servertest.Env, tls bool, roots string, require bool) *served {
	t.Helper()
	s := serve(t, env.Pool())
	var dtc = serverres.TLS(servertest.Provider, roots, require)
	if !tls {
		dtc = nil
	}
	env.Set(serverres.Listener(s.name(), s.host, s.port, nil,
		serverres.Chain("secure", nil, serverres.InlineHCM(serverres.Routes("r", serverres.Serve("/"))), dtc)))
	waitMode(t, s, xdsserver.ModeServing, "")
	return s
}

// callPeer makes an RPC and returns the server certificate's serial, "" when
// the connection has no TLS.
func callPeer(ctx context.Context, conn *grpc.ClientConn) (string, error) {
	var p peer.Peer
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	err := conn.Invoke(ctx, emptyCall, &emptyMsg{}, &emptyMsg{}, grpc.Peer(&p))
	if ti, ok := p.AuthInfo.(credentials.TLSInfo); ok && len(ti.State.PeerCertificates) > 0 {
		return ti.State.PeerCertificates[0].SerialNumber.String(), err
	}
	return "", err
}

func TestTLS(t *testing.T) {
	env := servertest.NewEnv(t, servertest.Options{})
	client := certtest.Names{URIs: []string{servertest.ClientSPIFFE}}
	for _, tc := range []struct {
		name          string
		roots         string
		require       bool
		plainOK       bool
		noCertOK      bool
		withCertOK    bool
		failureReason string
	}{
		{name: "TLS", noCertOK: true, withCertOK: true},
		{name: "mTLS required", roots: servertest.Provider, require: true, withCertOK: true, failureReason: "certificate"},
		{name: "client certificate optional", roots: servertest.Provider, noCertOK: true, withCertOK: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := tlsServer(t, env, true, tc.roots, tc.require)
			ctx := ctxT(t)
			check := func(what string, conn *grpc.ClientConn, wantOK bool) {
				t.Helper()
				serial, err := callPeer(ctx, conn)
				if (err == nil) != wantOK {
					t.Errorf("%s: %v, want success %v", what, err, wantOK)
				}
				if err == nil && serial == "" {
					t.Errorf("%s: served without TLS", what)
				}
			}
			check("plaintext client", s.plaintext(t), false)
			s.ev.wait(t, "the plaintext client's handshake failure", func(e *events) bool { return len(e.failed) >= 1 })
			check("TLS client without certificate", servertest.Dial(t, s.addr, grpc.WithTransportCredentials(env.ClientTLS(nil))), tc.noCertOK)
			check("TLS client with certificate", servertest.Dial(t, s.addr, grpc.WithTransportCredentials(env.ClientTLS(&client))), tc.withCertOK)
			s.ev.mu.Lock()
			defer s.ev.mu.Unlock()
			f := s.ev.failed[0]
			if f.Side != "server" || f.Chain != "secure" || !f.TLS || f.Remote.Addr().String() != "127.0.0.1" || f.Err == nil {
				t.Errorf("handshake failure %+v, want the server side of chain secure, with the peer and an error", f)
			}
			if tc.failureReason != "" {
				if len(s.ev.failed) < 2 || !strings.Contains(s.ev.failed[1].Err.Error(), tc.failureReason) {
					t.Errorf("handshake failures %+v, want the one without a client certificate to say %q", s.ev.failed, tc.failureReason)
				}
			}
		})
	}
}

// A rotated server certificate is shown by the connections made after it
// is read; those already open keep theirs.
func TestTLSRotation(t *testing.T) {
	env := servertest.NewEnv(t, servertest.Options{Refresh: 20 * time.Millisecond})
	s := tlsServer(t, env, true, "", false)
	ctx := ctxT(t)
	creds := grpc.WithTransportCredentials(env.ClientTLS(nil))
	first, err := callPeer(ctx, servertest.Dial(t, s.addr, creds))
	if err != nil {
		t.Fatal(err)
	}
	open := servertest.Dial(t, s.addr, creds)
	if _, err := callPeer(ctx, open); err != nil {
		t.Fatal(err)
	}
	next := env.ServerLeaf()
	env.Files.Rotate(t, next, nil)
	deadline := time.Now().Add(10 * time.Second)
	for {
		serial, err := callPeer(ctx, servertest.Dial(t, s.addr, creds))
		if err != nil {
			t.Fatal(err)
		}
		if serial == next.Cert.SerialNumber.String() {
			break
		}
		if serial != first || time.Now().After(deadline) {
			t.Fatalf("new connection shows certificate %s, want %s (the rotated one) within 10s", serial, next.Cert.SerialNumber)
		}
		time.Sleep(10 * time.Millisecond) // the provider reads the files every 20ms
	}
	if serial, err := callPeer(ctx, open); err != nil || serial != first {
		t.Errorf("the connection opened before: %s, %v; want the first certificate still", serial, err)
	}
}
