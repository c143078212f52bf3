package bootstrap

import (
	"context"
	"crypto/tls"
	"encoding/base64"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// callCredsDoc returns a bootstrap whose only server has the given
// channel_creds and call_creds.
func callCredsDoc(channel, call string) string {
	return serverDoc(`{"server_uri": "s:1", "channel_creds": ` + channel + `, "call_creds": ` + call + `}`)
}

const tlsCreds = `[{"type": "tls"}]`

func TestParseCallCreds(t *testing.T) {
	t.Setenv(EnvCallCreds, "true")
	tests := []struct {
		name string
		doc  string
		want []CallCreds
	}{
		{"jwt_token_file on tls", callCredsDoc(tlsCreds, `[{"type": "jwt_token_file", "config": {"jwt_token_file": "/t.jwt"}}]`),
			[]CallCreds{{Type: CallCredsJWTTokenFile, JWTTokenFile: "/t.jwt"}}},
		{"jwt_token_file on google_default", callCredsDoc(`[{"type": "google_default"}]`, `[{"type": "jwt_token_file", "config": {"jwt_token_file": "/t.jwt"}}]`),
			[]CallCreds{{Type: CallCredsJWTTokenFile, JWTTokenFile: "/t.jwt"}}},
		{"unknown types skipped, every supported one kept", callCredsDoc(tlsCreds,
			`[{"type": "sts"}, {"type": "jwt_token_file", "config": {"jwt_token_file": "/a"}}, {}, {"type": "jwt_token_file", "config": {"jwt_token_file": "/b"}}]`),
			[]CallCreds{{Type: CallCredsJWTTokenFile, JWTTokenFile: "/a"}, {Type: CallCredsJWTTokenFile, JWTTokenFile: "/b"}}},
		{"only unknown types", callCredsDoc(`[{"type": "insecure"}]`, `[{"type": "sts", "config": {"x": 1}}]`), nil},
		{"empty list", callCredsDoc(`[{"type": "insecure"}]`, `[]`), nil},
		{"null is absent", callCredsDoc(`[{"type": "insecure"}]`, `null`), nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Parse([]byte(tc.doc))
			if err != nil {
				t.Fatal(err)
			}
			got := cfg.Servers[0].CallCreds
			if len(got) != len(tc.want) {
				t.Fatalf("CallCreds = %+v, want %+v", got, tc.want)
			}
			for i := range got {
				if got[i].Type != tc.want[i].Type || got[i].JWTTokenFile != tc.want[i].JWTTokenFile {
					t.Errorf("CallCreds[%d] = %+v, want %+v", i, got[i], tc.want[i])
				}
			}
		})
	}
}

func TestParseCallCredsErrors(t *testing.T) {
	t.Setenv(EnvCallCreds, "true")
	jwt := func(config string) string {
		return callCredsDoc(tlsCreds, `[{"type": "jwt_token_file", "config": `+config+`}]`)
	}
	tests := []struct {
		name, doc, want string
	}{
		{"not an array", callCredsDoc(tlsCreds, `{"type": "jwt_token_file"}`),
			`xds bootstrap: xds_servers[0].call_creds: want a JSON array, got {"type":"jwt_token_file"}`},
		{"entry not an object", callCredsDoc(tlsCreds, `["jwt_token_file"]`),
			`xds bootstrap: xds_servers[0].call_creds[0]: want a JSON object, got "jwt_token_file"`},
		{"type not a string", callCredsDoc(tlsCreds, `[{"type": 7}]`),
			`xds bootstrap: xds_servers[0].call_creds[0].type: want a string, got 7`},
		{"config of an unknown type not an object", callCredsDoc(tlsCreds, `[{"type": "sts", "config": []}]`),
			`xds bootstrap: xds_servers[0].call_creds[0].config: want a JSON object, got []`},
		{"jwt config missing", callCredsDoc(tlsCreds, `[{"type": "jwt_token_file"}]`),
			`xds bootstrap: xds_servers[0].call_creds[0].config: missing: type "jwt_token_file" needs jwt_token_file`},
		{"jwt_token_file missing", jwt(`{}`),
			`xds bootstrap: xds_servers[0].call_creds[0].config.jwt_token_file: missing`},
		{"jwt_token_file empty", jwt(`{"jwt_token_file": ""}`),
			`xds bootstrap: xds_servers[0].call_creds[0].config.jwt_token_file: empty`},
		{"jwt_token_file not a string", jwt(`{"jwt_token_file": 1}`),
			`xds bootstrap: xds_servers[0].call_creds[0].config.jwt_token_file: want a string, got 1`},
		{"jwt on an insecure channel", callCredsDoc(`[{"type": "insecure"}]`, `[{"type": "sts"}, {"type": "jwt_token_file", "config": {"jwt_token_file": "/t"}}]`),
			`xds bootstrap: xds_servers[0].call_creds[1]: type "jwt_token_file" sends a token and needs transport security, which channel_creds type "insecure" does not give`},
		{"in an authority", withServers(`"authorities": {"a": {"xds_servers": [{"server_uri": "s:2", "channel_creds": [{"type": "tls"}], "call_creds": [{"type": "jwt_token_file", "config": {}}]}]}}`),
			`xds bootstrap: authorities["a"].xds_servers[0].call_creds[0].config.jwt_token_file: missing`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.doc))
			if err == nil || err.Error() != tc.want {
				t.Errorf("Parse error:\n got  %v\n want %s", err, tc.want)
			}
		})
	}
}

// Without the environment variable, call_creds is not read at all, as in
// gRPC.
func TestCallCredsNeedTheEnvironmentVariable(t *testing.T) {
	for _, v := range []string{"", "false", "yes"} {
		t.Setenv(EnvCallCreds, v)
		cfg, err := Parse([]byte(callCredsDoc(`[{"type": "insecure"}]`, `[{"type": "jwt_token_file"}]`)))
		if err != nil {
			t.Fatalf("%s=%q: %v", EnvCallCreds, v, err)
		}
		if cc := cfg.Servers[0].CallCreds; len(cc) != 0 {
			t.Errorf("%s=%q: CallCreds = %+v, want none", EnvCallCreds, v, cc)
		}
	}
}

func TestCallCredsChangeTheKey(t *testing.T) {
	t.Setenv(EnvCallCreds, "true")
	cfg, err := Parse([]byte(`{"xds_servers": [
		{"server_uri": "s:1", "channel_creds": [{"type": "tls"}]},
		{"server_uri": "s:1", "channel_creds": [{"type": "tls"}], "call_creds": [{"type": "jwt_token_file", "config": {"jwt_token_file": "/t"}}]},
		{"server_uri": "s:1", "channel_creds": [{"type": "tls"}], "call_creds": [{"type": "sts"}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	s := cfg.Servers
	if s[0].Key() == s[1].Key() {
		t.Error("a server with call creds has the key of one without")
	}
	if s[0].Key() != s[2].Key() {
		t.Error("unsupported call creds changed the key")
	}
}

func TestGoogleDefaultIsSelected(t *testing.T) {
	for _, doc := range []string{
		credsDoc(`[{"type": "google_default"}]`),
		credsDoc(`[{"type": "unknown_creds"}, {"type": "google_default"}, {"type": "insecure"}]`),
	} {
		cfg, err := Parse([]byte(doc))
		if err != nil {
			t.Fatalf("%s: %v", doc, err)
		}
		if got := cfg.Servers[0].SelectedCreds.Type; got != CredsGoogleDefault {
			t.Errorf("%s: selected %q, want google_default", doc, got)
		}
	}
}

// Without Application Default Credentials, google_default cannot be used,
// and the error says which server, which type and why.
func TestGoogleDefaultWithoutADC(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing.json")
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", missing)
	s := parseServerT(t, `{"server_uri": "xds.example.com:443", "channel_creds": [{"type": "google_default"}]}`)
	_, err := s.DialOptions()
	if err == nil {
		t.Fatal("DialOptions succeeded without credentials")
	}
	for _, want := range []string{`server "xds.example.com:443"`, `channel creds type "google_default" cannot be used`, "Application Default Credentials", missing} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}

// With Application Default Credentials (a user's refresh token here, which
// is only used when a token is needed), google_default makes a channel.
func TestGoogleDefaultWithADC(t *testing.T) {
	adc := filepath.Join(t.TempDir(), "adc.json")
	writeFile(t, adc, []byte(`{"type": "authorized_user", "client_id": "id", "client_secret": "secret", "refresh_token": "token"}`))
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", adc)
	s := parseServerT(t, `{"server_uri": "xds.example.com:443", "channel_creds": [{"type": "google_default"}]}`)
	opts, err := s.DialOptions()
	if err != nil {
		t.Fatal(err)
	}
	cc, err := grpc.NewClient(s.URI, opts...)
	if err != nil {
		t.Fatalf("grpc.NewClient with the google_default options: %v", err)
	}
	cc.Close()
}

// A jwt_token_file call credential puts the token on every RPC to the
// server, over TLS.
func TestJWTCallCredsReachTheServer(t *testing.T) {
	t.Setenv(EnvCallCreds, "true")
	dir := t.TempDir()
	cert := newTestCert(t, dir, "server")
	token := testJWT(time.Now().Add(time.Hour))
	tokenFile := filepath.Join(dir, "token.jwt")
	writeFile(t, tokenFile, []byte(token))

	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 1)
	srv := grpc.NewServer(grpc.Creds(credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{cert.pair}})),
		grpc.UnknownServiceHandler(func(_ any, stream grpc.ServerStream) error {
			md, _ := metadata.FromIncomingContext(stream.Context())
			got <- strings.Join(md.Get("authorization"), ",")
			return status.Error(codes.Unimplemented, "test server")
		}))
	go srv.Serve(lis)
	defer srv.Stop()

	s := parseServerT(t, fmt.Sprintf(`{"server_uri": %q, "channel_creds": [{"type": "tls", "config": {"ca_certificate_file": %q}}],
		"call_creds": [{"type": "jwt_token_file", "config": {"jwt_token_file": %q}}]}`, lis.Addr().String(), cert.certFile, tokenFile))
	opts, err := s.DialOptions()
	if err != nil {
		t.Fatal(err)
	}
	cc, err := grpc.NewClient(s.URI, opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{})
	if status.Code(err) != codes.Unimplemented {
		t.Fatalf("call: %v, want the server's Unimplemented", err)
	}
	if h := <-got; h != "Bearer "+token {
		t.Errorf("authorization = %q, want %q", h, "Bearer "+token)
	}
}

// testJWT returns an unsigned JWT that expires at exp.
func testJWT(exp time.Time) string {
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"none","typ":"JWT"}`)) + "." + enc([]byte(fmt.Sprintf(`{"exp":%d}`, exp.Unix()))) + ".sig"
}
