package bootstrap

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io/fs"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/credentials"
)

// testCert is a self-signed certificate, valid for "localhost" and
// 127.0.0.1 as server and client, written to PEM files.
type testCert struct {
	certFile, keyFile string
	pair              tls.Certificate
	leaf              *x509.Certificate
}

// newTestCert generates a self-signed certificate with common name cn and
// writes it to <dir>/<cn>.pem and <dir>/<cn>-key.pem.
func newTestCert(t *testing.T, dir, cn string) testCert {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: cn},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		DNSNames:              []string{"localhost"},
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
	c := testCert{certFile: filepath.Join(dir, cn+".pem"), keyFile: filepath.Join(dir, cn+"-key.pem")}
	writeFile(t, c.certFile, certPEM)
	writeFile(t, c.keyFile, keyPEM)
	if c.pair, err = tls.X509KeyPair(certPEM, keyPEM); err != nil {
		t.Fatal(err)
	}
	if c.leaf, err = x509.ParseCertificate(der); err != nil {
		t.Fatal(err)
	}
	return c
}

func writeFile(t *testing.T, name string, data []byte) {
	t.Helper()
	if err := os.WriteFile(name, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, to, data)
}

// tlsServer returns a server whose Config lists creds of type "tls" with
// the given config.
func tlsServer(t *testing.T, config map[string]string) *ServerConfig {
	t.Helper()
	raw, err := json.Marshal(config)
	if err != nil {
		t.Fatal(err)
	}
	return parseServerT(t, `{"server_uri": "localhost:443", "channel_creds": [{"type": "tls", "config": `+string(raw)+`}]}`)
}

// handshake runs one client handshake with creds against a TLS server
// with cfg on loopback. It returns the client's error and the server's.
func handshake(t *testing.T, creds credentials.TransportCredentials, authority string, cfg *tls.Config) (clientInfo credentials.AuthInfo, clientErr, serverErr error) {
	t.Helper()
	info, clientErr, serverErr, err := tryHandshake(creds, authority, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return info, clientErr, serverErr
}

// tryHandshake is handshake for any goroutine: a failure to set up the
// connection is returned as setupErr.
func tryHandshake(creds credentials.TransportCredentials, authority string, cfg *tls.Config) (clientInfo credentials.AuthInfo, clientErr, serverErr, setupErr error) {
	cfg = cfg.Clone()
	cfg.NextProtos = []string{"h2"}
	cfg.SessionTicketsDisabled = true
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, nil, err
	}
	defer lis.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	served := make(chan error, 1)
	go func() {
		conn, err := lis.Accept()
		if err != nil {
			served <- err
			return
		}
		defer conn.Close()
		tc := tls.Server(conn, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			served <- err
			return
		}
		served <- nil
	}()

	raw, err := net.Dial("tcp", lis.Addr().String())
	if err != nil {
		return nil, nil, nil, err
	}
	conn, info, clientErr := creds.ClientHandshake(ctx, authority, raw)
	serverErr = <-served
	if clientErr == nil {
		conn.Close()
	} else {
		raw.Close()
	}
	return info, clientErr, serverErr, nil
}

func TestTransportCredentialsInsecure(t *testing.T) {
	s := parseServerT(t, `{"server_uri": "s:1", "channel_creds": [{"type": "insecure"}]}`)
	creds, err := s.TransportCredentials()
	if err != nil {
		t.Fatal(err)
	}
	if got := creds.Info().SecurityProtocol; got != "insecure" {
		t.Errorf("SecurityProtocol = %q, want insecure", got)
	}
}

func TestTransportCredentialsTLSWithoutFiles(t *testing.T) {
	for _, doc := range []string{
		`{"server_uri": "s:1", "channel_creds": [{"type": "tls"}]}`,
		`{"server_uri": "s:1", "channel_creds": [{"type": "tls", "config": {"refresh_interval": "5s"}}]}`,
	} {
		creds, err := parseServerT(t, doc).TransportCredentials()
		if err != nil {
			t.Fatal(err)
		}
		if got := creds.Info().SecurityProtocol; got != "tls" {
			t.Errorf("SecurityProtocol = %q, want tls", got)
		}
		if _, ok := creds.(*reloadingCreds); ok {
			t.Errorf("credentials without files reload files")
		}
	}
}

func TestTransportCredentialsTLSHandshake(t *testing.T) {
	dir := t.TempDir()
	serverCert := newTestCert(t, dir, "server")
	clientCert := newTestCert(t, dir, "client")
	otherCA := newTestCert(t, dir, "other")

	clientCAs := x509.NewCertPool()
	clientCAs.AddCert(clientCert.leaf)
	plainServer := &tls.Config{Certificates: []tls.Certificate{serverCert.pair}}
	mtlsServer := &tls.Config{
		Certificates: []tls.Certificate{serverCert.pair},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    clientCAs,
	}

	tests := []struct {
		name          string
		config        map[string]string
		server        *tls.Config
		authority     string
		wantClientErr string // part of the client's error; "" for success
		wantServerErr string // part of the server's error; "" for success
	}{
		{
			name:      "CA only",
			config:    map[string]string{"ca_certificate_file": serverCert.certFile},
			server:    plainServer,
			authority: "localhost:443",
		},
		{
			name:      "mutual TLS",
			config:    map[string]string{"ca_certificate_file": serverCert.certFile, "certificate_file": clientCert.certFile, "private_key_file": clientCert.keyFile},
			server:    mtlsServer,
			authority: "localhost",
		},
		{
			name:          "server wants a client certificate that is not configured",
			config:        map[string]string{"ca_certificate_file": serverCert.certFile},
			server:        mtlsServer,
			authority:     "localhost:443",
			wantServerErr: "client didn't provide a certificate",
		},
		{
			name:          "wrong CA",
			config:        map[string]string{"ca_certificate_file": otherCA.certFile},
			server:        plainServer,
			authority:     "localhost:443",
			wantClientErr: "certificate signed by unknown authority",
		},
		{
			name:          "wrong server name",
			config:        map[string]string{"ca_certificate_file": serverCert.certFile},
			server:        plainServer,
			authority:     "xds.example.com:443",
			wantClientErr: "xds.example.com",
		},
		{
			name:          "no CA means system roots, which do not know a self-signed server",
			config:        map[string]string{"certificate_file": clientCert.certFile, "private_key_file": clientCert.keyFile},
			server:        plainServer,
			authority:     "localhost:443",
			wantClientErr: "certificate",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			creds, err := tlsServer(t, tt.config).TransportCredentials()
			if err != nil {
				t.Fatal(err)
			}
			if got := creds.Info().SecurityProtocol; got != "tls" {
				t.Errorf("SecurityProtocol = %q, want tls", got)
			}
			info, clientErr, serverErr := handshake(t, creds, tt.authority, tt.server)
			if tt.wantServerErr != "" {
				if serverErr == nil || !strings.Contains(serverErr.Error(), tt.wantServerErr) {
					t.Errorf("server handshake error = %v, want one containing %q", serverErr, tt.wantServerErr)
				}
				return
			}
			if tt.wantClientErr != "" {
				if clientErr == nil || !strings.Contains(clientErr.Error(), tt.wantClientErr) {
					t.Errorf("client handshake error = %v, want one containing %q", clientErr, tt.wantClientErr)
				}
				return
			}
			if clientErr != nil || serverErr != nil {
				t.Fatalf("handshake failed: client %v, server %v", clientErr, serverErr)
			}
			tlsInfo, ok := info.(credentials.TLSInfo)
			if !ok {
				t.Fatalf("AuthInfo is %T, want credentials.TLSInfo", info)
			}
			if peer := tlsInfo.State.PeerCertificates; len(peer) == 0 || !peer[0].Equal(serverCert.leaf) {
				t.Errorf("client saw the wrong server certificate")
			}
			if tlsInfo.State.NegotiatedProtocol != "h2" {
				t.Errorf("NegotiatedProtocol = %q, want h2", tlsInfo.State.NegotiatedProtocol)
			}
		})
	}
}

func TestTransportCredentialsTLSErrors(t *testing.T) {
	dir := t.TempDir()
	a := newTestCert(t, dir, "a")
	b := newTestCert(t, dir, "b")
	notPEM := filepath.Join(dir, "not.pem")
	writeFile(t, notPEM, []byte("this is not PEM"))
	missing := filepath.Join(dir, "missing.pem")

	tests := []struct {
		name   string
		config map[string]string
		want   string
		wantIs error
	}{
		{
			name:   "missing CA file",
			config: map[string]string{"ca_certificate_file": missing},
			want:   `server "localhost:443": tls channel creds: ca_certificate_file "` + missing + `": open: no such file or directory`,
			wantIs: fs.ErrNotExist,
		},
		{
			name:   "CA file without certificates",
			config: map[string]string{"ca_certificate_file": notPEM},
			want:   `server "localhost:443": tls channel creds: ca_certificate_file "` + notPEM + `": no PEM certificate found`,
		},
		{
			name:   "CA file is a directory",
			config: map[string]string{"ca_certificate_file": dir},
			want:   `server "localhost:443": tls channel creds: ca_certificate_file "` + dir + `": read: is a directory`,
		},
		{
			name:   "missing certificate file",
			config: map[string]string{"certificate_file": missing, "private_key_file": a.keyFile},
			want:   `server "localhost:443": tls channel creds: certificate_file "` + missing + `": open: no such file or directory`,
			wantIs: fs.ErrNotExist,
		},
		{
			name:   "missing key file",
			config: map[string]string{"certificate_file": a.certFile, "private_key_file": missing},
			want:   `server "localhost:443": tls channel creds: private_key_file "` + missing + `": open: no such file or directory`,
			wantIs: fs.ErrNotExist,
		},
		{
			name:   "key does not match certificate",
			config: map[string]string{"certificate_file": a.certFile, "private_key_file": b.keyFile},
			want:   `server "localhost:443": tls channel creds: certificate_file "` + a.certFile + `" with private_key_file "` + b.keyFile + `": tls: private key does not match public key`,
		},
		{
			name:   "certificate file holds no certificate",
			config: map[string]string{"certificate_file": notPEM, "private_key_file": a.keyFile},
			want:   `server "localhost:443": tls channel creds: certificate_file "` + notPEM + `" with private_key_file "` + a.keyFile + `": tls: failed to find any PEM data in certificate input`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			creds, err := tlsServer(t, tt.config).TransportCredentials()
			if err == nil {
				t.Fatalf("TransportCredentials() = %v, want error %q", creds, tt.want)
			}
			if err.Error() != tt.want {
				t.Errorf("TransportCredentials() error\n got: %s\nwant: %s", err, tt.want)
			}
			if tt.wantIs != nil && !errors.Is(err, tt.wantIs) {
				t.Errorf("error %v is not %v", err, tt.wantIs)
			}
		})
	}
}

func TestTransportCredentialsHandBuilt(t *testing.T) {
	tests := []struct {
		name string
		s    *ServerConfig
		want string
	}{
		{"unsupported type", &ServerConfig{URI: "s:1", SelectedCreds: ChannelCreds{Type: "unknown_creds"}},
			`server "s:1": channel creds type "unknown_creds" is not supported`},
		{"no selected creds", &ServerConfig{URI: "s:1"},
			`server "s:1": channel creds type "" is not supported`},
		{"tls with cert and no key", &ServerConfig{URI: "s:1", SelectedCreds: ChannelCreds{Type: "tls", Config: json.RawMessage(`{"certificate_file": "c.pem"}`)}},
			`server "s:1": tls channel creds: config.private_key_file: must be set because certificate_file is "c.pem"`},
		{"tls config not an object", &ServerConfig{URI: "s:1", SelectedCreds: ChannelCreds{Type: "tls", Config: json.RawMessage(`[]`)}},
			`server "s:1": tls channel creds: config: want a JSON object, got []`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.s.TransportCredentials()
			if err == nil || err.Error() != tt.want {
				t.Errorf("TransportCredentials() error = %v, want %q", err, tt.want)
			}
		})
	}
}

// fakeClock is a settable time source.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

func TestTLSCredsReload(t *testing.T) {
	dir := t.TempDir()
	certA := newTestCert(t, dir, "a")
	certB := newTestCert(t, dir, "b")
	caFile := filepath.Join(dir, "ca.pem")
	copyFile(t, certA.certFile, caFile)

	set, err := parseTLSConfig("config", json.RawMessage(`{"ca_certificate_file": "`+caFile+`", "refresh_interval": "60s"}`))
	if err != nil {
		t.Fatal(err)
	}
	if set.refresh != time.Minute {
		t.Fatalf("refresh = %v, want 1m", set.refresh)
	}
	clock := &fakeClock{t: time.Unix(1000, 0)}
	creds, err := newTLSCreds(set, clock.now)
	if err != nil {
		t.Fatal(err)
	}
	serverB := &tls.Config{Certificates: []tls.Certificate{certB.pair}}
	serverA := &tls.Config{Certificates: []tls.Certificate{certA.pair}}

	expect := func(step string, server *tls.Config, wantOK bool) {
		t.Helper()
		_, clientErr, _ := handshake(t, creds, "localhost:443", server)
		if wantOK && clientErr != nil {
			t.Errorf("%s: handshake failed: %v", step, clientErr)
		}
		if !wantOK && clientErr == nil {
			t.Errorf("%s: handshake succeeded, want failure", step)
		}
	}

	expect("trusting a, server b", serverB, false)
	expect("trusting a, server a", serverA, true)

	copyFile(t, certB.certFile, caFile)
	clock.t = clock.t.Add(59 * time.Second)
	expect("file changed, period not over", serverB, false)

	clock.t = clock.t.Add(time.Second)
	expect("period over, file read again", serverB, true)
	expect("and a is no longer trusted", serverA, false)

	if err := os.Remove(caFile); err != nil {
		t.Fatal(err)
	}
	clock.t = clock.t.Add(2 * time.Minute)
	expect("file gone, last good kept", serverB, true)

	writeFile(t, caFile, []byte("garbage"))
	clock.t = clock.t.Add(2 * time.Minute)
	expect("file bad, last good kept", serverB, true)

	copyFile(t, certA.certFile, caFile)
	clock.t = clock.t.Add(2 * time.Minute)
	expect("file good again", serverA, true)
}

func TestTLSCredsDefaultRefresh(t *testing.T) {
	set, err := parseTLSConfig("config", json.RawMessage(`{"ca_certificate_file": "x.pem"}`))
	if err != nil {
		t.Fatal(err)
	}
	if set.refresh != DefaultTLSRefreshInterval || DefaultTLSRefreshInterval != 600*time.Second {
		t.Errorf("refresh = %v, want 600s", set.refresh)
	}
}

func TestTLSCredsCloneAndOverride(t *testing.T) {
	dir := t.TempDir()
	cert := newTestCert(t, dir, "server")
	creds, err := tlsServer(t, map[string]string{"ca_certificate_file": cert.certFile}).TransportCredentials()
	if err != nil {
		t.Fatal(err)
	}
	server := &tls.Config{Certificates: []tls.Certificate{cert.pair}}

	clone := creds.Clone()
	if err := clone.OverrideServerName("localhost"); err != nil {
		t.Fatal(err)
	}
	if got := clone.Info().ServerName; got != "localhost" {
		t.Errorf("clone Info().ServerName = %q, want localhost", got)
	}
	if got := creds.Info().ServerName; got != "" {
		t.Errorf("original Info().ServerName = %q, want it untouched", got)
	}
	if _, clientErr, _ := handshake(t, clone, "xds.example.com:443", server); clientErr != nil {
		t.Errorf("handshake with overridden server name failed: %v", clientErr)
	}
	if _, clientErr, _ := handshake(t, creds, "xds.example.com:443", server); clientErr == nil {
		t.Errorf("original creds used the clone's override")
	}

	if _, _, err := creds.ServerHandshake(nil); err == nil {
		t.Errorf("ServerHandshake succeeded, want an error")
	}
}

func TestTLSCredsConcurrentHandshakes(t *testing.T) {
	dir := t.TempDir()
	cert := newTestCert(t, dir, "server")
	set, err := parseTLSConfig("config", json.RawMessage(`{"ca_certificate_file": "`+cert.certFile+`", "refresh_interval": "0.000000001s"}`))
	if err != nil {
		t.Fatal(err)
	}
	creds, err := newTLSCreds(set, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	server := &tls.Config{Certificates: []tls.Certificate{cert.pair}}
	errs := make(chan error, 8)
	for range cap(errs) {
		go func() {
			_, clientErr, _, setupErr := tryHandshake(creds, "localhost:443", server)
			errs <- errors.Join(clientErr, setupErr)
		}()
	}
	for range cap(errs) {
		if err := <-errs; err != nil {
			t.Errorf("handshake: %v", err)
		}
	}
}
