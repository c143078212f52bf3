// Command xdswatch watches xDS resources and prints every change and error
// that an xDS client reports for them, one line per watcher callback; it
// also routes gRPC channels by them and shows what their RPCs see.
//
// Usage:
//
//	xdswatch [flags] TYPE:NAME|xds:///LISTENER ...
//	xdswatch [flags] explain xds:///LISTENER --method /SERVICE/METHOD [--header KEY=VALUE ...]
//
// TYPE is lds, rds, cds or eds, or the full type URL of one of those four
// types, such as type.googleapis.com/envoy.config.cluster.v3.Cluster. NAME
// is the resource name, which may itself contain colons (xdstp:// names
// do). The same TYPE:NAME given twice makes two watchers of one resource.
// An argument xds:///LISTENER (or xds://AUTHORITY/LISTENER, gRFC A47) is a
// gRPC channel routed by the listener's resources (see Channels); given
// twice, it makes two channels. The explain command says what the routing
// of such a channel does with one RPC, without sending it (see Explain).
//
// Flags:
//
//	--bootstrap FILE         bootstrap JSON; else GRPC_XDS_BOOTSTRAP / GRPC_XDS_BOOTSTRAP_CONFIG;
//	                         with none of them it starts an embedded demo control plane
//	--target NAME            pool key, the grpc.target label and the CSDS client_scope (default "xdswatch")
//	--csds-addr HOST:PORT    serve the admin port there: CSDS, channelz, health, reflection
//	                         (":0" style ports allowed; "" for none)
//	--metrics-addr HOST:PORT serve Prometheus text on /metrics there (the metrics of package
//	                         telemetry; "" for none)
//	--otlp-endpoint URL      also push the metrics with OTLP: grpc://HOST:PORT (gRPC),
//	                         http://HOST:PORT (HTTP, path /v1/metrics unless the URL has
//	                         one); grpcs:// and https:// for TLS; default ports 4317, 4318
//	--otlp-interval DUR      how often to push (default OTEL_METRIC_EXPORT_INTERVAL, else 60s)
//	--service-name NAME      OpenTelemetry service.name of the metrics: Prometheus's
//	                         target_info, the OTLP resource (default OTEL_SERVICE_NAME,
//	                         else "xdswatch")
//	--resource-timeout DUR   base does-not-exist timer (default 15s); it starts when a
//	                         request for the resource is sent (gRFC A57), so while no
//	                         server can be reached the resources wait and none times out
//	--keepalive-time DUR     HTTP/2 keepalive ping interval of the xDS channels (default 5m, gRPC's;
//	                         at least 10s)
//	--keepalive-timeout DUR  how long a ping may go unanswered before the connection
//	                         counts as failed (default 20s, gRPC's)
//	--output text|json       text for people (default), JSON lines for programs
//	--log-level LEVEL        what the xDS client and the metrics exporters log on standard
//	                         error: debug, info, warn (default) or error
//	--log-format text|json   the logs as slog's text (default) or JSON lines
//	--version                print the module version and VCS revision, and exit 0
//	--stdin                  also read commands from standard input, one a line:
//	                         +TYPE:NAME starts one more watcher, -TYPE:NAME cancels
//	                         the oldest watcher of that resource; +xds:///LISTENER starts
//	                         one more channel, -xds:///LISTENER closes the oldest of them
//	--rpc-interval DUR       make one RPC per interval through each xds:/// channel (default
//	                         none; with --demo-tour, a third of --demo-tour-step)
//	--rpc-method /S/M        the RPCs' method, with an empty request
//	                         (default /grpc.health.v1.Health/Check)
//	--rpc-header KEY=VALUE   a header sent as metadata with every RPC; repeatable
//	--rpc-timeout DUR        the deadline of each RPC (default 1s)
//	--serve HOST:PORT        run an xDS-enabled gRPC server there (the health service and
//	                         grpc.testing.TestService), served as the Listener named by the
//	                         bootstrap's server_listener_resource_name_template says;
//	                         repeatable; a serving line per serving mode change
//	--demo-tour              demo only: walk the demo control plane through every cache state,
//	                         outlier detection, retries and faults, routing xds:///demo and
//	                         showing what its RPCs see
//	--demo-tour-step DUR     how long the tour shows each state (default 3s); unless given,
//	                         --resource-timeout is the same
//	--method /S/M            explain: the RPC's method
//	--header KEY=VALUE       explain: a header of the RPC's metadata; repeatable
//
// # Demo
//
// Without a bootstrap, xdswatch starts a go-control-plane server on a
// loopback port serving a small demo configuration rooted at listener
// "demo", whose route sends every RPC to cluster demo-cluster, whose
// endpoints are two gRPC servers on 127.0.0.1 that xdswatch runs (the
// health service and grpc.testing.TestService). With no argument it
// watches that listener, its route configuration, its cluster and the
// cluster's endpoints, and the Listener of an xDS-enabled server on
// 127.0.0.1:8443 (by the bootstrap's
// server_listener_resource_name_template), or on each --serve address:
// one filter chain under mTLS (a client certificate required) with an
// RBAC filter that allows the health service to every client with a
// certificate, TestService's EmptyCall to spiffe://xdswatch.demo/ns/demo/sa/client
// alone, and denies the rest, auditing each denial. The demo makes the
// certificates at start (a CA, the server's, a client's) in a temporary
// directory, which its bootstrap's certificate_providers read; xdswatch
// --serve 127.0.0.1:8443 serves that Listener, and prints a grpcurl
// command with the client's certificate to try. The demo cluster reports load
// to the demo server (lrs_server self), which serves LRS too: xdswatch
// keeps a load report stream open, reporting no calls of its own (a
// channel to xds:///demo reports its RPCs). With an argument, it watches
// what the arguments say instead; so
//
//	xdswatch --rpc-interval 500ms xds:///demo
//
// shows the demo's config and RPCs that succeed, answered by the two
// backends in turn. It then serves
// the admin port and the metrics on 127.0.0.1 ports chosen by the system,
// unless --csds-addr and --metrics-addr name others ("" turns one off),
// and in text mode prints what to try on them:
//
//	xdswatch: admin port (CSDS, channelz, health, reflection) on 127.0.0.1:PORT; try: grpcdebug 127.0.0.1:PORT xds status   or: grpcdebug 127.0.0.1:PORT channelz channels
//	xdswatch: metrics on http://127.0.0.1:PORT/metrics; try: curl http://127.0.0.1:PORT/metrics
//
// In JSON mode the listening line carries the same addresses.
//
// # Demo tour
//
// --demo-tour adds a second demo server, listed second in the demo
// bootstrap with resource_timer_is_transient_error, routes a channel to
// xds:///demo (it takes no argument: it watches the demo's resources and
// that channel itself) with an RPC every --rpc-interval, and walks the
// client through the cases of gRFC A88 and A71, one step per
// --demo-tour-step, each announced on standard error ("xdswatch: tour
// N/14 ...") with every change it makes and what RPCs will see, and
// followed by a "reached" line once the client shows the whole cache the
// step announced (every entry, its state, the version it uses and the
// server that sent it) and an RPC has shown the announced outcome, naming
// what changed:
//
//	| step             | what the control plane does                     | what the client shows            | RPCs                  |
//	|------------------|-------------------------------------------------|----------------------------------|-----------------------|
//	| start            | serves version 1 (five resources)               | REQUESTED, then ACKED            | succeed               |
//	| version update   | version 2: one endpoint fewer                   | every resource ACKED at 2        | succeed               |
//	| NACK             | version 3: an unsupported (STATIC) cluster      | cds NACKED, version 2 in use     | keep succeeding       |
//	| ignored deletion | version 4 leaves the cluster out                | cds DOES_NOT_EXIST, still in use | keep succeeding       |
//	| TP3 error        | version 5: resource_errors UNAVAILABLE for the  | cds RECEIVED_ERROR, still in use | keep succeeding       |
//	|                  | cluster                                         |                                  |                       |
//	| does-not-exist   | version 6: the cluster again, and the route     | cds ACKED; cds tour-missing      | succeed, then fail    |
//	|                  | sends RPCs to cluster tour-missing, which no    | REQUESTED, then DOES_NOT_EXIST   | UNAVAILABLE naming    |
//	|                  | server has                                      |                                  | it and the node ID    |
//	| recovery         | version 7: the route sends RPCs to the cluster  | every resource ACKED at 7;       | succeed               |
//	|                  | again                                           | tour-missing unsubscribed        |                       |
//	| fallback         | the primary stops; a new watch of cds           | secondary's version fallback-1;  | keep succeeding       |
//	|                  | tour-timeout                                    | tour-timeout TIMEOUT             |                       |
//	| switch back      | the primary returns with version 8              | version 8 from the primary       | keep succeeding       |
//	| RBAC             | nothing: xdswatch calls the demo's xDS-enabled  | unchanged; the server SERVING    | EmptyCall OK,         |
//	|                  | server under mTLS as the demo client            |                                  | UnaryCall denied      |
//	|                  |                                                 |                                  | (PERMISSION_DENIED)   |
//	| not serving      | version 9: the server's Listener names another  | every resource ACKED at 9; the   | keep succeeding       |
//	|                  | port                                            | server NOT_SERVING               |                       |
//	| serving again    | version 10: the Listener's address back         | ACKED at 10; the server SERVING  | keep succeeding       |
//	| resilience       | version 11: a backend failing every RPC added   | ACKED at 11; the failing backend | succeed, some at a    |
//	|                  | to the cluster under outlier detection, a       | ejected (an ejection line)       | second attempt, each  |
//	|                  | retry_policy on the route, a fault filter that  |                                  | delayed (fault delay) |
//	|                  | delays every RPC                                |                                  |                       |
//	| healthy again    | version 12: version 10 again                    | ACKED at 12; the endpoint        | succeed in one        |
//	|                  |                                                 | returned                         | attempt, no fault     |
//
// The tour runs the demo's xDS-enabled server itself, on a loopback port
// the system chooses (or the --serve addresses), and prints its serving
// lines on standard output; the RBAC denial's audit line (gRFC A59's
// stdout logger) goes to standard error, as every audit line of --serve
// does, standard output being xdswatch's.
//
// Every version serves the whole demo configuration, the server Listener
// and the cluster's lrs_server included, changed only as the table says;
// the other resources stay as they were, at the new version. At the
// does-not-exist step, RPCs keep going to demo-cluster while tour-missing
// is REQUESTED: a route is used only once every cluster it names has been
// heard from (gRFC A74). Each state is held for a step after it is
// reached, so CSDS, the metrics and the RPCs show it too. The tour waits
// for the client at each step (the
// switch back waits for gRPC's reconnect backoff to the primary), and at
// the default step of 3s takes under a minute. A NACKed version is not
// sent again: the demo server waits for the next version, as a control
// plane should, where go-control-plane alone would resend it at once.
//
// # Output
//
// With --output text, each callback is one line:
//
//	15:04:05.000 cds c1 v3: cluster c1: EDS service "c1", round_robin
//	15:04:05.000 cds c1 ERROR NOT_FOUND: <message>
//	15:04:05.000 cds c1 AMBIENT UNAVAILABLE: <message>
//	15:04:05.000 cds c1 ambient error cleared
//
// ERROR lines come from ResourceChanged with an error (stop using the
// resource); AMBIENT lines from AmbientError (keep using it); "ambient
// error cleared" from AmbientError(nil), gRFC A88's OnAmbientError(OK): the
// error reported before is over. An error that says what the watch's last
// line said is not printed again: while a server stays down, the client
// tells every watcher again on each failed reconnect, and a person wants a
// line per change (the transport's reason for each attempt, such as EOF
// then connection refused, does not count as a change; the servers tried
// do). The client logs a server's failure as a warning on standard error
// once, and its retries at debug level.
//
// When a server fails before any request could be sent to it, xdswatch
// says once on standard error that it was not reached and that the
// resources wait for it: their does-not-exist timers start only once a
// request is sent (gRFC A57), so none times out meanwhile.
//
// With --output json, every callback is a line, and the first line is
//
//	{"event":"listening","csds":"HOST:PORT","metrics":"HOST:PORT"}
//
// (an address is "" when that server is not running), then one line per
// callback:
//
//	{"ts":"<RFC3339Nano>","event":"resource","type":"cds","name":"c1","version":"3","resource":{<protojson>}}
//	{"ts":"<RFC3339Nano>","event":"resource_error","type":"cds","name":"c1","code":"NOT_FOUND","message":"..."}
//	{"ts":"<RFC3339Nano>","event":"ambient_error","type":"cds","name":"c1","code":"UNAVAILABLE","message":"..."}
//
// type is the short name of the resource type, code the gRPC status code
// name. An ambient_error with code "OK" and an empty message is
// AmbientError(nil): the error reported before is over. Fields that the
// xDS APIs mark sensitive (private keys, passwords) are printed as
// "[redacted]", here and over CSDS.
//
// # Channels
//
// For each xds:///LISTENER argument, xdswatch dials a gRPC channel with the
// resolver of package xdsgrpc, registered for the "xds" scheme on that
// channel only (grpc.WithResolvers; nothing is registered globally), with
// insecure credentials. The channel uses the pool's client of --target
// (xdsgrpc.WithPoolTarget), the one the TYPE:NAME watches use: CSDS and the
// metrics show one cache, and the channel's dependency manager (package
// xdsconfig) shares its subscriptions. Its resolver starts at once, not at
// the first RPC, and the channel never goes idle.
//
// The config lines come from the channel's xdsgrpc hooks: one line per
// config the channel uses (ConfigChanged) and per error that fails its
// whole config (ConfigFailed), so a line is exactly what the channel's RPCs
// are routed by. In JSON:
//
//	{"ts":"…","event":"config","target":"xds:///L","listener":"L","route_config":"R","virtual_host":"VH","clusters":{
//	   "c1":{"type":"eds","lb_policy":"round_robin","priorities":[["127.0.0.1:4001","127.0.0.1:4002"],["127.0.0.1:4003"]],"resolution_note":"…"},
//	   "agg":{"type":"aggregate","leaves":["c1","c2"]},
//	   "bad":{"error":{"code":"NOT_FOUND","message":"…"}}}}
//	{"ts":"…","event":"config_error","target":"xds:///L","code":"NOT_FOUND","message":"…"}
//
// target is the argument as given; listener the Listener's name (from the
// bootstrap's templates, gRFC A47); route_config "" when the route
// configuration is inline in the listener; virtual_host the one chosen
// for the channel's authority. clusters has a slot for every cluster the
// virtual host's routes name and every leaf of an aggregate: type eds,
// logical_dns or aggregate; for a leaf, lb_policy is the gRPC name of the
// policy that picks its endpoints (round_robin, pick_first,
// ring_hash_experimental, least_request_experimental,
// weighted_round_robin, or a custom policy's name), outlier_detection is
// true when the cluster has outlier detection, priorities lists per priority the
// sorted addresses of the endpoints the channel may use (health UNKNOWN or
// HEALTHY; [] when there are none, or when the endpoints could not be had)
// and resolution_note the note RPCs that find no endpoint carry (gRFC A88:
// the ambient errors behind the cluster, or the node ID); for an
// aggregate, leaves in priority order; for a slot that failed, error with
// the code the dependency manager got (NOT_FOUND for a cluster that does
// not exist: the line is for people) and the message RPCs routed there
// fail with, UNAVAILABLE. A config_error's code is likewise the code the
// client reported, and its message, the one RPCs fail with, names the
// listener (it is prefixed with it when the failed resource is the route
// configuration) and the node ID. A change of anything in a config, a
// resolution note included, is a new config line.
//
// With --rpc-interval, xdswatch makes one RPC per interval through each
// channel, one at a time (a late one starts as soon as the last ends), of
// --rpc-method with an empty request, with the --rpc-header metadata and a
// deadline of --rpc-timeout, and prints a line for each:
//
//	{"ts":"…","event":"rpc","target":"xds:///L","method":"/grpc.health.v1.Health/Check","code":"OK","message":"","peer":"127.0.0.1:4001","cluster":"c1"}
//
// peer is the backend's address, cluster the cluster the route chose (for
// an aggregate cluster, the aggregate's name); each is "" when the RPC
// failed before reaching one. An RPC made before the channel's first
// config waits for it, as any gRPC RPC on a channel still resolving does,
// up to --rpc-timeout (then DEADLINE_EXCEEDED). Any response is accepted
// and not printed. RPCs cut short by the end of xdswatch or of the channel
// are not printed.
//
// In text mode the same facts, one line each; a config line that says
// what the channel's last config line said is not printed again (the
// version of a resource is not shown, and the transport's reason of an
// unreachable server does not count, as for watches):
//
//	15:04:05.000 xds:///L config: listener L, route config R, virtual host VH; cluster agg: aggregate of c1, c2; cluster bad: ERROR NOT_FOUND: <message>; cluster c1: eds round_robin [127.0.0.1:4001 127.0.0.1:4002] [127.0.0.1:4003], note: xDS node ID:n
//	15:04:05.000 xds:///L config ERROR NOT_FOUND: <message>
//	15:04:05.000 xds:///L rpc /grpc.health.v1.Health/Check: OK, cluster c1, peer 127.0.0.1:4001
//	15:04:05.000 xds:///L rpc /grpc.health.v1.Health/Check: UNAVAILABLE, cluster bad, no peer: <message>
//
// A leaf with no endpoints reads "eds, no endpoints"; an inline route
// configuration reads "route config (inline)".
//
// The admin port (--csds-addr) also serves each channel's config history,
// its last 16 configs with what changed and the versions of the resources
// behind them, as xdslens.admin.v1.ConfigHistory/List (package admin,
// package history for the JSON): grpcurl -plaintext HOST:PORT
// xdslens.admin.v1.ConfigHistory/List. A closed channel's history goes
// with it.
//
// # Explain
//
// xdswatch explain xds:///LISTENER --method /SERVICE/METHOD [--header
// KEY=VALUE ...] runs the dependency manager of that listener with the
// client of --target, waits for its first config (up to --rpc-timeout),
// and prints one line: what a channel's routing (xdsgrpc.Explain, the code
// its picker runs) does with an RPC of that method and metadata, without
// sending it, then exits 0. A config that fails prints its config_error
// line and exits 1, as does no config within --rpc-timeout. In JSON:
//
//	{"ts":"…","event":"explain","target":"xds:///L","method":"/pkg.Svc/M","virtual_host":"VH",
//	 "route":"canary","match":"prefix \"/\", header \"x-lane\" exact \"canary\"","outcome":"routed",
//	 "cluster":"c1","clusters":{"c1":{"type":"eds","lb_policy":"ring_hash_experimental"}},
//	 "hash":"0x8a5c…","hash_policies":["header \"x-user\""],"plan":{"timeout":"5s","retry":{"on":["UNAVAILABLE"],"max_attempts":3,"base_interval":"25ms","max_interval":"250ms"}},
//	 "tried":[{"route":"#0","match":"path \"/pkg.Svc/Other\"","matched":false,"share":0,"why":"the path does not match"},
//	          {"route":"canary","match":"…","matched":true,"share":1,"why":"its matchers all match"}],
//	 "reason":"route canary (…) is the first that matches /pkg.Svc/M; the routes before it do not: …"}
//
// route is the route's name, or #INDEX (its position among the virtual
// host's routes that gRPC uses), "" when none matches; route_share, present
// only below 1, the share of such RPCs a runtime_fraction gives it (the
// reason says where the others go). outcome is routed, no_route,
// unsupported_action or cluster_error, with error the status such an RPC
// fails with. cluster is the route's cluster, "" for weighted clusters,
// whose weights gives each cluster's weight (a random draw picks one per
// RPC); clusters describes each, with the HTTP filters the RPC would run
// through and the error it would fail with. hash is the request hash of
// the route's hash policies (gRFC A42), which a ring_hash cluster picks
// by; absent when the policies produce none, or when one hashes the
// channel's random ID (io.grpc.channel_id): the reason says which. plan
// has the deadline bound (max_stream_duration) and the retry policy.
// tried lists the routes evaluated in order, up to the first that takes
// every such RPC, each with the matcher that decided. In text mode, the
// reason on one line:
//
//	15:04:05.000 xds:///L explain /pkg.Svc/M: virtual host "VH": route canary (prefix "/", header "x-lane" exact "canary") is the first that matches /pkg.Svc/M; ...
//
// # Servers
//
// Each --serve HOST:PORT is served by one xDS-enabled gRPC server (package
// xdsserver, with the client of --target) with the health service and
// grpc.testing.TestService, as the Listener the bootstrap's
// server_listener_resource_name_template names for that address says;
// a bootstrap without the template is a usage error. Every serving mode
// change is a line:
//
//	{"ts":"…","event":"serving","address":"127.0.0.1:8443","mode":"SERVING"}
//	{"ts":"…","event":"serving","address":"127.0.0.1:8443","mode":"NOT_SERVING","message":"Listener \"grpc/server?…\" has the address 127.0.0.1:8444, not the listening address 127.0.0.1:8443"}
//	10:40:22.452 serving 127.0.0.1:8443 NOT_SERVING: Listener "grpc/server?…" has the address …
//
// An RPC that RBAC denies fails PERMISSION_DENIED at the client, as any
// gRPC server's would. The server's metrics (telemetry.NewServerMetrics)
// are served with the others.
//
// # Metrics
//
// --metrics-addr serves the metrics of package telemetry in the Prometheus
// text format: those of the pool's clients (telemetry.New) and those of
// every xds:/// channel's data plane (package telemetry/dataplane on the
// channel's xdsgrpc Builder: picks by cluster and outcome, calls by status,
// drops, configs, in-flight RPCs against max_requests), whose grpc.target
// is that of the xDS client the channels share, --target, as on the
// client's own series, and whose xdslens.channel_target is the channel's
// argument (xds:///demo), but on the in-flight and max_requests gauges,
// which count per xDS client; a channel's gauges stop when it is closed.
// Its RPCs are measured with gRFC A66's per-call instruments too
// (dataplane.WithPerCallMetrics: grpc.client.attempt.duration by cluster
// and locality, grpc.client.call.duration, ...), whose grpc.target is, as
// A66 says, the channel's own (xds:///demo). --otlp-endpoint pushes the same ones to
// an OpenTelemetry Collector or any OTLP receiver, and otel-collector.yaml beside this file
// is a Collector configuration that receives them and serves them to
// Prometheus. Both describe the process with the OpenTelemetry resource,
// service.name set by --service-name. A failed push is logged as it
// happens, on the logger of --log-level and --log-format: a warning for
// the first failure of a cause, debug for the failures of the same cause
// that follow, info when a push succeeds again. The last push, at exit,
// is made before the watches and channels end, so that it carries every
// instrument as it was, the gauges included.
//
// # Logs and version
//
// The xDS client's logs (a server's failure, fallback, load reporting)
// and the metrics exporters' go to standard error through log/slog, at
// --log-level and above (warn by default), as slog's text handler writes
// them (time=... level=WARN msg=... key=value) or, with --log-format json,
// as its JSON handler does ({"time":...,"level":"WARN","msg":...}); the
// lines that xdswatch itself prints on standard error ("xdswatch: ...")
// are not logs and keep their shape. --version prints one line and exits
// 0:
//
//	xdswatch v1.2.0 github.com/xdslens/xdslens revision 4f2a9c0d1e2b go1.26.8
//
// the module's version ("(devel)" when built in its own tree), the VCS
// revision the build recorded, "(modified)" for a tree with uncommitted
// changes, and the Go version; "unknown" for what the build did not
// record (go install of a tagged version records no revision).
//
// # Input limits
//
// The bootstrap file may be a pipe (--bootstrap <(...)); it is read up to
// 4 MiB, and a larger one (or a device such as /dev/zero) is refused.
// SIGINT and SIGTERM are answered while xdswatch waits for it. A line of
// standard input over 64 KiB is reported on standard error and skipped;
// the lines after it are read as usual.
//
// # Exit status
//
// SIGINT and SIGTERM end xdswatch cleanly with status 0, once every
// channel and the demo's backends are stopped. Bad flags (a --rpc-header
// that is not KEY=VALUE of a header gRPC lets a caller send, a duration
// that is not positive, an --rpc-* flag without --rpc-interval), a bad
// TYPE:NAME or xds:///LISTENER (an authority the bootstrap lacks
// included), a bootstrap that cannot be read or parsed, or a --csds-addr
// or --metrics-addr it cannot listen on end it with status 2 and one line
// on standard error; other failures to start give status 1.
package main
