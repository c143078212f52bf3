// Package bootstrap parses the gRPC xDS bootstrap (gRFCs A27, A47, A71, A65,
// A81, A88): the JSON document that tells an xDS client which management
// servers to talk to, how to secure the channels to them, who the client
// is, and which servers serve which resource names.
//
// # Where the bootstrap comes from
//
// [FromEnv] reads the file named by GRPC_XDS_BOOTSTRAP, or, when that is
// unset, the JSON in GRPC_XDS_BOOTSTRAP_CONFIG. [ParseFile] and [Parse] take
// a file or the JSON directly.
//
// # What it holds
//
//   - "xds_servers": the management servers, in priority order (A71). Each
//     has a "server_uri", a list of "channel_creds" of which the first
//     supported type is used ("insecure", "tls" from A65, or
//     "google_default" from A27), an optional list of "call_creds" (A97)
//     of which every supported type is used ("jwt_token_file"), and
//     "server_features" that change how the client treats that server
//     ("ignore_resource_deletion", "fail_on_data_errors",
//     "resource_timer_is_transient_error", "trusted_xds_server", and
//     "delta_xds", which selects incremental xDS for that server). Servers
//     are de-duplicated by [ServerConfig.Key]; [ServerConfig.DialOptions]
//     turns the credentials into gRPC dial options.
//   - "node": the client's identity, as an envoy.config.core.v3.Node.
//   - "authorities" (A47): for each authority of xdstp:// resource names,
//     its own servers and the template of its client Listener names.
//     [Config.ServersFor] picks the servers for a resource name;
//     [Config.ClientListenerResourceName] and
//     [Config.ServerListenerResourceName] build Listener names from the
//     templates.
//   - "client_default_listener_resource_name_template",
//     "server_listener_resource_name_template" and "certificate_providers"
//     (A29). The config of a "file_watcher" provider is validated as gRPC
//     does and parsed into [FileWatcherConfig]; providers of other plugins
//     are kept unchecked. Resources name these instances in their TLS
//     settings, and a resource naming one that is not here is rejected.
//
// # Credentials
//
//	channel_creds type  what the channel uses
//	insecure            plaintext
//	tls                 TLS with the config's CA, certificate and key files (A65), reloaded
//	google_default      grpc-go's Google default credentials bundle: TLS or ALTS, with an
//	                    OAuth token from the Application Default Credentials on each RPC
//
//	call_creds type     what each RPC to the server carries
//	jwt_token_file      "authorization: Bearer <JWT>" read from config.jwt_token_file (A97)
//
// "google_default" parses anywhere, but [ServerConfig.DialOptions] fails,
// naming the server and the type, on a machine without Application
// Default Credentials. As A97 says, "call_creds" is read only when the
// environment variable GRPC_EXPERIMENTAL_XDS_BOOTSTRAP_CALL_CREDS is
// "true"; otherwise it is ignored unchecked, as gRPC does. A call
// credential sends a secret, so grpc-go refuses it on a channel without
// transport security: a "jwt_token_file" entry on a server whose selected
// channel_creds type is "insecure" is a bootstrap error here, not a
// failure to connect later.
//
// # Server URIs as shown
//
// A "server_uri" may carry a credential: user info in the authority
// ("passthrough://user:pw@/host:443") or in the endpoint
// ("dns:///user:pw@host:443"), or a query or fragment ("...?token=...").
// The client dials the URI as written, and shows it everywhere else as
// [ServerConfig.ShownURI] gives it: those parts replaced by [Redacted],
// the scheme, host, port and path kept, so that
// "dns:///user:pw@host:443?token=t" is shown as
// "dns:///[redacted]@host:443?[redacted]", the same every time (the
// grpc.xds.server label of the client's metrics, its logs, its hooks,
// the errors it gives watchers). [ShowURI] is the one parser of what may
// be shown; [ServerConfig.Redact] hides the same parts in text that may
// quote them, such as the errors of a gRPC channel dialled with the URI.
//
// # Errors
//
// Parsing is strict about what it knows and silent about what it does not:
// unknown keys are ignored, while a known key with a bad value is an error
// that gives the JSON path and the value, such as
//
//	xds bootstrap: xds_servers[0].channel_creds: no supported type among ["unknown_creds" "foo"]
//
// A key whose value is null counts as absent.
//
// Errors are bounded as the client bounds what a server sends: each
// string of the bootstrap an error quotes (a type, a name, a template, a
// file name) is cut at 1 KiB, the message about one field at 8 KiB, the
// whole error at 16 KiB, each cut marked "...[N more bytes]". A bootstrap
// read from the environment by the default pool of a gRPC channel makes
// its error the status of every RPC, so no bootstrap can make those
// messages large.
package bootstrap
