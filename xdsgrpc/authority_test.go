package xdsgrpc_test

import (
	"fmt"
	"net/url"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/resolver"

	"github.com/xdslens/xdslens/xdsgrpc"
)

// authorityRecorder is a resolver builder without an authority of its
// own: gRPC gives its channels the default authority, which Build
// records.
type authorityRecorder struct{ got chan string }

func (r authorityRecorder) Build(_ resolver.Target, _ resolver.ClientConn, bo resolver.BuildOptions) (resolver.Resolver, error) {
	r.got <- bo.Authority
	return nopResolver{}, nil
}
func (authorityRecorder) Scheme() string { return "authority-recorder" }

type nopResolver struct{}

func (nopResolver) ResolveNow(resolver.ResolveNowOptions) {}
func (nopResolver) Close()                                {}

// TestAuthorityAsGRPCMakesIt: for endpoints with bytes an authority may
// hold and bytes it may not, Authority is the authority gRPC gives a
// channel whose resolver does not choose one.
func TestAuthorityAsGRPCMakesIt(t *testing.T) {
	rec := authorityRecorder{got: make(chan string, 1)}
	for _, endpoint := range []string{
		"svc", "svc.example.com:8080", "a%20b", "a%2Fb", "a/b", "%25", "caf%C3%A9", "[::1]:443", "user@host",
		"!$&'()*+,;=-._~", "a%7Cb%22c%3Cd%3E", ":8080", "xdstp:%2F%2Fauthority%2Fenvoy.config.listener.v3.Listener%2Fsvc",
	} {
		target := "authority-recorder:///" + endpoint
		cc, err := grpc.NewClient(target, grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithResolvers(rec))
		if err != nil {
			t.Fatalf("%s: %v", target, err)
		}
		cc.Connect()
		want := <-rec.got
		cc.Close()
		parsed, err := parseTarget(target)
		if err != nil {
			t.Fatal(err)
		}
		if got := xdsgrpc.Authority(parsed); got != want {
			t.Errorf("Authority(%s) = %q, gRPC gives %q", target, got, want)
		}
	}
}

// parseTarget parses a target as gRPC does for a registered scheme.
func parseTarget(target string) (resolver.Target, error) {
	u, err := url.Parse(target)
	if err != nil {
		return resolver.Target{}, fmt.Errorf("%q: %w", target, err)
	}
	return resolver.Target{URL: *u}, nil
}
