package xdsgrpc_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/xdslens/xdslens/internal/testing/certtest"
	"github.com/xdslens/xdslens/internal/testing/rpctest"
	"github.com/xdslens/xdslens/internal/testing/xdstest"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/controlplane"
	"github.com/xdslens/xdslens/xdsclient"
)

// regexSAN is a safe_regex SAN matcher.
func regexSAN(expr string) *matcherv3.StringMatcher {
	return &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_SafeRegex{SafeRegex: &matcherv3.RegexMatcher{Regex: expr}}}
}

// TestTLSSANMatchersFollowTheCluster: the SAN matchers a handshake
// applies are those of the Cluster the channel has when it connects,
// compiled from it and not from an earlier Cluster: a safe_regex the
// server's SPIFFE ID matches lets RPCs through, a new Cluster whose
// regex it does not match fails the next handshake (naming that regex),
// and a third whose regex it matches again lets them through again.
func TestTLSSANMatchersFollowTheCluster(t *testing.T) {
	t.Parallel()
	ctx := xdstest.Context(t)
	ca := certtest.NewCA(t, "sans-ca")
	leaf := ca.Issue(t, certtest.Names{CommonName: "server", URIs: []string{"spiffe://example.org/ns/prod/sa/server"}})
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	// A server without services: every RPC that reaches it is
	// UNIMPLEMENTED, which rpctest.Call counts as reached.
	srv := grpc.NewServer(grpc.Creds(credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{leaf.TLS}})))
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)

	cp, err := controlplane.Start(ctx, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cp.Stop)
	boot := xdstest.Bootstrap{
		Servers:              []string{cp.Addr()},
		Node:                 fmt.Sprintf(`{"id": %q}`, rpctest.NodeID),
		CertificateProviders: fmt.Sprintf(`{"roots": {"plugin_name": "file_watcher", "config": %s}}`, certtest.WriteFiles(t, nil, ca).FileWatcherJSON(time.Hour)),
	}
	set := func(version, expr string) {
		t.Helper()
		if err := cp.SetResources(ctx, rpctest.NodeID, version,
			controlplane.Listener("L", "R"),
			rpctest.RouteConfig("R", rpctest.Route(rpctest.PrefixMatch(""), rpctest.ToCluster("secure"))),
			withUpstreamTLS(t, controlplane.Cluster("secure", ""), regexSAN(expr)),
			controlplane.Endpoints("secure", lis.Addr().String()),
		); err != nil {
			t.Fatal(err)
		}
	}
	conn := rpctest.DialTLS(t, xdsclient.NewPool(boot.Parse(t), xdstest.ClientOptions()...), "xdslens:///L")

	reached := func(what string) {
		t.Helper()
		var o rpctest.Outcome
		if !rpctest.Poll(ctx, func(ctx context.Context) bool {
			o = rpctest.Call(ctx, conn, "/pkg.Svc/M")
			return o.Err == nil
		}) {
			t.Fatalf("%s: RPCs never reached the server: %v", what, o.Err)
		}
	}
	set("1", `spiffe://example\.org/ns/prod/sa/[a-z]+`)
	reached("a regex the server's SPIFFE ID matches")

	const dev = `spiffe://example\.org/ns/dev/sa/[a-z]+`
	set("2", dev)
	var o rpctest.Outcome
	if !rpctest.Poll(ctx, func(ctx context.Context) bool {
		o = rpctest.Call(ctx, conn, "/pkg.Svc/M")
		// The message quotes the handshake's error twice over.
		return o.Err != nil && strings.Contains(o.Err.Error(), "matches match_subject_alt_names [safe_regex") && strings.Contains(o.Err.Error(), "/ns/dev/sa/")
	}) {
		t.Fatalf("after a Cluster whose regex the server does not match: RPC %v (backend %q), want a handshake failure naming the regex %s", o.Err, o.Backend, dev)
	}

	set("3", `spiffe://example\.org/ns/(prod|dev)/sa/server`)
	reached("a third regex the server's SPIFFE ID matches")
}
