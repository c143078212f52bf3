// Package admin registers on a gRPC server the services that operators'
// tools read from a process that runs xdslens xDS clients, so that one port
// answers them all:
//
//	| service                                              | what it answers                         | grpcdebug command          |
//	|------------------------------------------------------|-----------------------------------------|----------------------------|
//	| envoy.service.status.v3.ClientStatusDiscoveryService | the xDS clients' caches (package csds)  | xds status, xds config     |
//	| grpc.channelz.v1.Channelz                            | the process's gRPC channels and servers | channelz channels, servers |
//	| grpc.health.v1.Health                                | SERVING, until Shutdown                 | health                     |
//	| grpc.reflection.v1(alpha).ServerReflection           | the services above, for grpcurl & co.   |                            |
//
// [Register] takes the clients to report as csds.NewServer and
// telemetry.New do, an xdsclient.Source: a *xdsclient.Client, a
// *xdsclient.Pool, or csds.ForTarget's view of one target of a pool:
//
//	srv := grpc.NewServer()
//	a := admin.Register(srv, pool)
//	defer a.Shutdown()
//	go srv.Serve(lis)
//
// # Channelz
//
// Importing this package turns on gRPC's channelz data collection for the
// whole process (as grpc-go's channelz service does), so every
// grpc.ClientConn created afterwards is listed, the xDS client's channels
// included: one top channel per xDS server the client talks to, whose
// target is the server_uri of the bootstrap, as written (credentials in
// it included: channelz is the one place xdslens does not hide them, see
// bootstrap.ServerConfig.ShownURI), and whose state is the channel's
// connectivity state. A channel the client closes (its last
// watch cancelled, a switch back from a fallback server, Close) leaves the
// list. Channelz is process-wide: it also lists channels and servers that
// are not xdslens's.
//
// # Health
//
// The health service reports SERVING for the overall service ("") from
// Register on, and NOT_SERVING for every service after
// [Services.Shutdown], which a process calls before it stops its server so
// that health checkers stop sending it work. [Services.Health] gives the
// health server itself, to report services of the process's own.
//
// # Readiness of an xDS-enabled server
//
// [Services.TrackServer] makes the health service report an
// xdsserver.Server's serving mode under a service name ("xds-server",
// [ServerService], by convention): SERVING while every address it serves
// is SERVING, NOT_SERVING otherwise. The xDS server's own ports cannot
// answer a probe while they do not serve (they close every connection, as
// gRFC A36 asks) and may require a client certificate, so the probe asks
// the admin port. In Kubernetes:
//
//	readinessProbe:
//	  grpc:
//	    port: 9901          # the admin port
//	    service: xds-server
//	  periodSeconds: 5
//	livenessProbe:
//	  grpc:
//	    port: 9901          # "": SERVING from Register until Shutdown
//
// A pod then receives traffic only once its Listener has come, and stops
// receiving it when the control plane takes the Listener away; the
// liveness probe does not restart it for a control plane's outage.
//
// # grpcdebug and several clients
//
// grpcdebug v1.0.5, its latest release, refuses a CSDS response with more
// than one ClientConfig. A process whose pool holds several clients can
// serve one target per admin server with csds.ForTarget, or pass a single
// *xdsclient.Client; see the csds package.
package admin
