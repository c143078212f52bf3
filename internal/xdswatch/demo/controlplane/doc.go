// Package controlplane runs a go-control-plane management server on a
// loopback address, for tests and demos that need a real xDS server.
//
// A [Server] serves the Aggregated Discovery Service, both State of the
// World and delta, from a go-control-plane snapshot cache. Resources are
// handed to [Server.SetResources], which replaces the whole configuration of
// one node at once, so a client never sees half of an update:
//
//	srv, err := controlplane.Start(ctx, "127.0.0.1:0")
//	if err != nil { ... }
//	defer srv.Stop()
//	err = srv.SetResources(ctx, "node-1", "1", controlplane.DemoResources("demo")...)
//
// The builders in this package ([Listener], [ServerListener],
// [RouteConfig], [Cluster], [Endpoints], [DemoResources]) make resources
// that gRPC's validation accepts; [ListenerWithFault], [WithRetry],
// [WithMaxStreamDuration] and [WithOutlierDetection] add the fault filter
// (gRFC A33), retries (A44), deadlines (A31) and outlier detection (A50).
//
// The server behaves as go-control-plane v0.14 does, including its quirks:
//   - A change is pushed only to types whose version differs from the version
//     the client last acknowledged, so every SetResources call that changes
//     something needs a new version string.
//   - A request whose response_nonce is not the latest one sent for its type
//     is ignored without any answer.
//   - A State of the World request with no resource names is answered with
//     every resource of that type in the snapshot.
//   - Snapshots are not checked for consistency: a listener may name a route
//     configuration that the snapshot lacks, which lets tests exercise
//     resources that do not exist.
package controlplane
