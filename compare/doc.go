// Package compare runs xdslens's data plane beside grpc-go's own xDS
// client, on the same control plane and backends, and fails where the two
// differ, except in the differences it names.
//
// It is a module of its own because it compiles grpc-go's whole xDS client
// (94 packages that nothing else here needs): the repository's test command
// stays quick, and CI runs this module after it:
//
//	cd compare && go test -race -vet=all ./...
//
// The same for servers: xdslens's xDS-enabled server (package xdsserver)
// beside grpc-go's xds.NewGRPCServer with xDS server credentials, each
// under its own Listener of one control plane, equal but for the
// address: serving modes (servingmodes_test.go), filter chain matching
// (chains_test.go), a table of RBAC policies and the audit events of both
// (rbac_test.go), the drain of a connection whose client ignores the
// GOAWAYs (goaway_test.go). Where they differ on purpose, the test says so and
// checks the difference: a deleted Listener (xdslens keeps serving, as
// gRFC A88 says; grpc-go stops), destination prefixes on a listener
// bound to one address (xdslens matches them, as Envoy and gRPC C-core
// do; grpc-go ignores them), the policy name of audit events (the
// RBAC filter's name in xdslens, as gRFC A59 says; empty in grpc-go), and
// string matchers with an empty prefix: in a route's header matcher
// (sidebyside_test.go), an RBAC policy (rbac_test.go) and a cluster's
// match_subject_alt_names (tls_test.go), xdslens accepts them, as gRPC
// C-core does, and grpc-go rejects the resource; and a stream opened
// after the final GOAWAY of a drained connection, which closes the
// connection on xdslens (its streams still open cut) and which grpc-go,
// like C-core, drops without an answer while it serves the others.
//
// The channels' deliberate differences are checked likewise, among them
// the load reports of an RPC that a backend fails with a Trailers-Only
// answer before the client has written its request, which gRPC-Go
// v1.85.0 ends without its status: xdslens counts it as the failure it
// is, grpc-go as a success (loadreport_test.go).
//
// BenchmarkRPC times unary RPCs through both channels in one run;
// BenchmarkServerMTLS the handshake and the RPCs of both servers under
// mTLS and RBAC.
package compare
