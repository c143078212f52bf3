// Command xdswatch watches xDS resources and prints every change and error
// that an xDS client reports for them, one line per watcher callback.
//
// Usage:
//
//	xdswatch [flags] TYPE:NAME [TYPE:NAME ...]
//
// TYPE is lds, rds, cds or eds, or the full type URL of one of those four
// types, such as type.googleapis.com/envoy.config.cluster.v3.Cluster. NAME
// is the resource name, which may itself contain colons (xdstp:// names
// do). The same TYPE:NAME given twice makes two watchers of one resource.
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
//	--stdin                  also read commands from standard input, one a line:
//	                         +TYPE:NAME starts one more watcher, -TYPE:NAME cancels
//	                         the oldest watcher of that resource
//	--demo-tour              demo only: walk the demo control plane through every cache state
//	--demo-tour-step DUR     how long the tour shows each state (default 3s); unless given,
//	                         --resource-timeout is the same
//
// # Demo
//
// Without a bootstrap, xdswatch starts a go-control-plane server on a
// loopback port serving a small demo configuration rooted at listener
// "demo", and with no TYPE:NAME it watches that listener, its route
// configuration, its cluster and the cluster's endpoints, and the Listener
// of an xDS-enabled server on 127.0.0.1:8443 (by the bootstrap's
// server_listener_resource_name_template). The demo cluster reports load
// to the demo server (lrs_server self), which serves LRS too: xdswatch
// keeps that load report stream open, reporting no calls. It then serves
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
// bootstrap with resource_timer_is_transient_error, and walks the client
// through the cases of gRFC A88 and A71, one step per --demo-tour-step,
// each announced on standard error ("xdswatch: tour N/9 ...") with every
// change it makes, and followed by a "reached" line once the client shows
// the whole cache the step announced (every entry, its state, the version
// it uses and the server that sent it), naming what changed:
//
//	| step             | what the control plane does                             | what the client shows            |
//	|------------------|---------------------------------------------------------|----------------------------------|
//	| start            | serves version 1 (five resources)                       | REQUESTED, then ACKED            |
//	| version update   | version 2: one endpoint fewer                           | every resource ACKED at 2        |
//	| NACK             | version 3: an unsupported (STATIC) cluster              | cds NACKED, version 2 in use     |
//	| ignored deletion | version 4 leaves the cluster out                        | cds DOES_NOT_EXIST, still in use |
//	| TP3 error        | version 5: resource_errors UNAVAILABLE for the cluster  | cds RECEIVED_ERROR, still in use |
//	| does-not-exist   | (a new watch of cds tour-missing, which no server has)  | REQUESTED, then DOES_NOT_EXIST   |
//	| recovery         | version 6: the cluster again                            | cds ACKED, ambient error cleared |
//	| fallback         | the primary stops; a new watch of cds tour-timeout      | secondary's version fallback-1;  |
//	|                  |                                                         | tour-timeout TIMEOUT             |
//	| switch back      | the primary returns with version 7                      | version 7 from the primary       |
//
// Every version serves the whole demo configuration, the server Listener
// and the cluster's lrs_server included, changed only as the table says;
// the other resources stay as they were, at the new version. Each state is
// held for a step after it is reached, so CSDS and the metrics show it
// too. The tour waits for the client at each step (the
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
// # Metrics
//
// --metrics-addr serves the metrics of package telemetry in the Prometheus
// text format; --otlp-endpoint pushes the same ones to an OpenTelemetry
// Collector or any OTLP receiver, and otel-collector.yaml beside this file
// is a Collector configuration that receives them and serves them to
// Prometheus. Both describe the process with the OpenTelemetry resource,
// service.name set by --service-name.
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
// SIGINT and SIGTERM end xdswatch cleanly with status 0. Bad flags, a bad
// TYPE:NAME, a bootstrap that cannot be read or parsed, or a --csds-addr or
// --metrics-addr it cannot listen on end it with status 2 and one line on
// standard error; other failures to start give status 1.
package main
