// Package xdsresource decodes and validates xDS resources into typed Go
// values.
//
// Each kind of resource is described by a [Type]: its type URL, whether the
// State-of-the-World protocol sends it as a full set, and a Decode function
// that turns the wire bytes into a validated value. The four resource types
// that gRPC uses are provided as [ListenerType], [RouteConfigType],
// [ClusterType] and [EndpointsType], whose Decode returns a *[Listener], a
// *routeconfig.Config, a *[Cluster] and a *[ClusterLoadAssignment]; users
// may implement [Type] for their own resources and hand it to the client.
//
// Validation follows gRPC: a resource that gRPC could not use is rejected
// with an error that names the resource, the field and the value, such as
//
//	lds "grpc/server?xds.resource.listening_address=0.0.0.0:8443": filter_chains[1].filter_chain_match: overlaps filter_chains[0]
//
// and the client NACKs it. [DecodeOptions] tells the decoders what they
// need to know beyond the bytes: the server that sent the resource, and
// the certificate provider instances of the bootstrap.
//
// # Where the values are
//
// The parts of a resource are validated, and their values defined, in the
// package of those who read them; this package puts them together into
// the four resources:
//
//	| package        | holds                                                                           | read by                        |
//	|----------------|---------------------------------------------------------------------------------|--------------------------------|
//	| xdsresource    | the Type interface and the four types; Listener, Cluster, ClusterLoadAssignment | xdsclient, xdsconfig, xdsgrpc  |
//	| routeconfig    | route configurations (RDS or inline) and the HttpConnectionManager              | xdsgrpc, xdsserver             |
//	| serverlistener | server Listeners (gRFC A36): address, filter chains and their matches           | xdsserver                      |
//	| filterconfig   | the HTTP filters of a listener and their per-route overrides (gRFC A39)         | xdsgrpc, xdsserver             |
//	| security       | the TLS contexts of clusters and server filter chains (gRFC A29)                | xdscreds, xdsserver            |
//	| lbpolicy       | a cluster's load-balancing policy (gRFC A52, A58)                               | xdsgrpc                        |
//	| rls            | the RLS cluster specifier plugin (gRFC A28)                                     | routeconfig                    |
//	| matcher        | string and header matchers                                                      | routeconfig, security, xdsgrpc |
//
// A Listener without api_listener is a server's: its Server field holds
// the serverlistener.Listener, and its other fields are zero. The rules
// of every package are the rows of the table below; each row names the
// resource, and the field names the package.
//
// # Decoding a Cluster
//
// A full-state CDS response resends every cluster, so [ClusterType]
// decodes without building the whole protobuf message for the fields most
// clusters have: name, type, eds_cluster_config (service_name, and
// eds_config as ads or self with its resource_api_version),
// connect_timeout, lb_policy and lrs_server (ads or self) are read from
// the wire into reused scratch messages; every other field,
// known or not, is merged by the protobuf runtime in its place in wire
// order, so that oneofs, repeated and merged occurrences, unknown fields
// and the recursion limit behave exactly as in proto.Unmarshal. Malformed
// input, such as a string that is not UTF-8, is decoded again by the
// runtime for its error. Validation is the same code either way. A test
// and a fuzz target check the result against proto.Unmarshal's, message
// for message.
//
// # Rules
//
// The rules were checked against the source of grpc-go v1.85.0, with its
// experimental environment variables unset. The last column says which
// implementation a rule follows: "C-core" where C-core is known to differ
// from grpc-go and its behaviour was chosen, "grpc-go" where only grpc-go's
// behaviour was checked and C-core may differ, "neither" where both are
// left on purpose, with the reason; C-core's source was not read at a
// pinned version.
//
//	| resource | rule | source | follows |
//	|---|---|---|---|
//	| Listener | with api_listener: a client Listener, whose api_listener holds an HttpConnectionManager | A27 | |
//	| Listener | without api_listener: a server Listener (serverlistener.Listener); it needs address.socket_address; listener_filters and use_original_dst true are rejected | A36 | |
//	| Listener | HttpConnectionManager: xff_num_trusted_hops 0, no original_ip_detection_extensions, rds or route_config (scoped_routes rejected) | A27, A36 | |
//	| Listener | rds.config_source: ads or self on clients, ads only on servers | A27, A36 | grpc-go |
//	| Listener | http_filters: unique non-empty names, the router last and only last; an unknown type is rejected unless is_optional | A39 | |
//	| Listener | http_filters: an HttpFilter's disabled is not read: a filter marked disabled is validated, kept and run on every route as any other | A39 | C-core (grpc-go reads it only with its experimental ext_proc or ext_authz switch on; Envoy runs such a filter only where a route's override enables it) |
//	| Listener | a filter gRPC runs only on the other side (fault: clients only; RBAC: servers only) is rejected unless is_optional, then left out | A39, A41 | |
//	| Listener | a server filter chain has exactly one network filter, the HttpConnectionManager, with typed_config; the filter's name is not read (it may be empty) | A36 | C-core: FilterChainParse in src/core/xds/grpc/xds_listener_parser.cc (grpc-go accepts several HttpConnectionManagers and uses the first, and rejects a filter without a name) |
//	| Listener | every filter chain is validated whole (its match's CIDR ranges, its one filter and its HttpConnectionManager, its transport_socket), and the default chain's match too; then chains matching on destination_port, server_names, application_protocols or a transport_protocol other than "raw_buffer" are dropped, so an invalid part of a dropped chain rejects the Listener; source_type and overlaps are checked only among the chains kept | A36 | C-core (which parses every chain before it builds its chain map; grpc-go drops such chains unread) |
//	| Listener | a "raw_buffer" chain replaces, for its destination prefixes, the chains without transport_protocol | A36 | grpc-go |
//	| Listener | prefix_ranges and source_prefix_ranges: IP addresses, prefix_len at most the address size (128 for an IPv4-mapped IPv6 address); masked before comparing; an IPv4-mapped range of at least 96 bits is the IPv4 range it holds (::ffff:10.0.0.0/104 is 10.0.0.0/8, and holds IPv4 peers, whose addresses are compared unmapped), a shorter one the IPv6 range it is (::ffff:10.0.0.0/8 is ::/8, which holds no IPv4 address), as RBAC's CIDR ranges are read | A36 | neither (grpc-go unmaps the address and keeps the length: it rejects ::ffff:10.0.0.0/104 and reads ::ffff:10.0.0.0/8 as 10.0.0.0/8; C-core compares address families, so an IPv4-mapped range never holds a connection from an IPv4 peer, and takes a prefix_len beyond the address's size as that size, where grpc-go and xdslens reject it) |
//	| Listener | source_type of a chain kept: ANY, SAME_IP_OR_LOOPBACK or EXTERNAL, another value rejected | A36 | grpc-go (C-core reads it only while building its chain map, as here, and stops at an assertion on another value) |
//	| Listener | source_ports: 0 stands for any port, as no ports do (a chain with no ports and one listing 0 overlap); a connection takes the chain that names its port, else the one for any port | A36 | C-core (and Envoy and grpc-go, which key both the same) |
//	| Listener | a connection's source type (xdsserver): SAME_IP_OR_LOOPBACK when the peer's address is a loopback one (127.0.0.0/8, ::1) or the server's own, else EXTERNAL; chains of type ANY serve it when no chain of its destination names its type | A36 | grpc-go and Envoy, whose matching gRFC A36 asks for (C-core takes 127.0.0.1 alone for IPv4 loopback, and ignores ANY chains whenever a chain of the destination names a source type) |
//	| Listener | two chains (or one chain twice) with the same destination prefix, source type, source prefix and source port overlap: rejected | A36 | |
//	| Listener | no usable filter chain and no default_filter_chain: rejected | A36 | grpc-go (C-core rejects only a Listener without filter_chains; one whose chains are all dropped it accepts and serves no connection, where a NACK keeps the last good Listener serving) |
//	| Listener | DownstreamTlsContext: require_sni false, ocsp_staple_policy LENIENT_STAPLING, common_tls_context set; an identity provider instance is required; require_client_certificate needs a ca_certificate_provider_instance; no match_subject_alt_names; a validation context without ca_certificate_provider_instance is accepted and asks for no client certificate | A29 | C-core (for a validation context without roots, which grpc-go rejects) |
//	| Listener | an RBAC filter's config is read only on servers, after the side check: an optional RBAC filter on a client is left out unread | A39, A41 | C-core (grpc-go parses it first and rejects a bad one) |
//	| Listener, RouteConfiguration | a router, fault, RBAC or RBACPerRoute config in a TypedStruct (xds or udpa), in http_filters or typed_per_filter_config, is rejected even when is_optional; the type_url inside still names the filter, so an unknown one stays skippable | A39, A41 | C-core (the side check comes first: an optional fault filter in a TypedStruct on a server is left out, where grpc-go parses it first and rejects it) |
//	| Listener, RouteConfiguration | a filter type registered with package httpfilter (config or override type URL, also inside a TypedStruct) is understood: its filter parses each config (ParseConfig) and override (ParseOverride), and one it refuses is NACKed even when is_optional; a registered filter runs on servers when it is an httpfilter.ServerFilter, and on no client: elsewhere it is rejected unless is_optional, then left out. Router, fault, RBAC and RBACPerRoute stay validated by this package | A39 | |
//	| RouteConfiguration | typed_per_filter_config of virtual hosts, routes and weighted clusters is kept (filterconfig.Overrides), FilterConfig wrappers resolved; optional ones of an unknown type left out | A39 | |
//	| Listener, RouteConfiguration | RBAC and RBACPerRoute configs are parsed by package httpfilter's RBAC filter, the one xDS-enabled servers run, so a config is accepted exactly when a server can enforce it; the rows below are its rules | A41 | |
//	| Listener, RouteConfiguration | RBAC: no rules means no enforcement; rules with action LOG are ignored and not read; another action than ALLOW, DENY or LOG is rejected | A41 | C-core (grpc-go still checks the header names and conditions of LOG policies) |
//	| Listener, RouteConfiguration | RBAC: shadow_rules, shadow_matcher and matcher are ignored | A41 | |
//	| Listener, RouteConfiguration | RBAC audit_logging_options of ALLOW and DENY rules: audit_condition NONE, ON_DENY, ON_ALLOW or ON_DENY_AND_ALLOW; each logger needs audit_logger.typed_config, even when is_optional; known loggers are the stdout logger and, in a TypedStruct, one registered with gRPC in this program (package authz/audit) under the last segment of the type_url, whose parser must accept the struct as JSON; another type is rejected unless is_optional, then ignored | A59 | C-core as it runs with audit logging on (its default leaves it off behind GRPC_EXPERIMENTAL_XDS_RBAC_AUDIT_LOGGING and ignores the options, a rollout switch A59 does not describe); grpc-go rejects an optional logger of a type it cannot unmarshal and does not check audit_condition |
//	| Listener, RouteConfiguration | RBAC policies: condition and checked_condition rejected; every permission and principal, nested in and_rules/or_rules/not_rule and and_ids/or_ids/not_id, has a rule gRPC knows (destination_port_range, uri_template, matcher, sourced_metadata, filter_state and custom are rejected); any, destination_port and metadata accepted as they are (any: false matches as any: true, which Envoy rejects) | A41 | C-core for any: false |
//	| Listener, RouteConfiguration | RBAC header matchers: a name of ":scheme" or starting with "grpc-" is rejected, compared without case ("GRPC-Foo" is a grpc- header); "host" and other pseudo-headers accepted; a match specifier is required, safe_regex_match valid RE2 as written and once anchored, range_match end not below start; values as in route header matchers (package matcher reads both) | A41 | grpc-go for the name (C-core compares it with case, so it accepts a matcher on "GRPC-Foo" that can never match, gRPC's header keys being lower case); C-core for the rest (grpc-go accepts a reversed range; C-core rejects the range and bad regexes when it builds the policy) |
//	| Listener, RouteConfiguration | RBAC string matchers (url_path.path, requested_server_name, authenticated.principal_name, header string_match): a pattern required (custom rejected), safe_regex valid RE2 as written (one valid only once anchored, which would match otherwise than it reads, is rejected) and once anchored (one nested 999 levels deep, which anchoring takes past the 1000 levels of Go's parser, is rejected), any value for exact, prefix, suffix and contains, the empty one included (an empty prefix, suffix or contains matches every value); url_path needs path | A41 | C-core: StringMatcher::Create in src/core/util/matchers.cc, called by the RBAC filter's config parser (src/core/ext/filters/rbac/rbac_service_config_parser.cc, fed by src/core/xds/grpc/xds_http_rbac_filter.cc); grpc-go rejects an empty prefix, suffix or contains in a StringMatcher (its deprecated header prefix_match, suffix_match and contains_match take an empty one) |
//	| Listener, RouteConfiguration | RBAC CIDR ranges (destination_ip, source_ip, direct_remote_ip, remote_ip): an IP address without zone, prefix_len at most its size (an IPv4-mapped address has 128 bits); an IPv4-mapped range holds the IPv4 peers it maps | A41 | grpc-go (C-core compares address families, so an IPv4-mapped range never holds a peer, whose address it unmaps) |
//	| RouteConfiguration | RBACPerRoute overrides, on virtual hosts, routes and weighted clusters, are validated as RBAC under rbac even when is_optional; one without rbac turns RBAC off for its scope | A41 | |
//	| RouteConfiguration | cluster_specifier_plugins: RouteLookupClusterSpecifier accepted and validated as gRPC's RLS policy does; another type rejected unless is_optional, and its routes ignored; plugins no route uses are dropped | A28 | |
//	| RouteConfiguration | virtual_hosts[].domains: not empty, each an exact domain or one whose first or last character is "*" ("*" alone matches every host); only that character is a wildcard, which stands for at least one character, and any other "*" stands for itself ("**" matches the hosts that end in "*"; "a*b" is rejected) | A27 | C-core (grpc-go accepts any domain, finds no virtual host when its search meets an invalid one, and lets a wildcard stand for no character) |
//	| RouteConfiguration | typed_per_filter_config: a FilterConfig wrapper needs its config, whatever is_optional says; its disabled field is not read: an override marked disabled is validated as any other and its config applies, on channels (xdsgrpc) and xDS-enabled servers (xdsserver) alike, so a fault override aborts and delays as it says and an RBACPerRoute with rules is enforced | A39, A41 | C-core (grpc-go, with its ext_proc and ext_authz switches off, also ignores disabled, but accepts a FilterConfig without config when it is optional; Envoy turns the filter off, which on a server would leave a route without the RBAC that gRPC runs there) |
//	| RouteConfiguration | match.headers: a match specifier is required (a string_match needs a pattern, custom rejected), safe_regex valid RE2 as written and once anchored, range_match end not below start; any value for exact, prefix, suffix and contains, the empty one included, in the match specifier or a string_match (an empty prefix, suffix or contains matches every value of a header that is present) | A28 | C-core: RouteHeaderMatchersParse in src/core/xds/grpc/xds_route_config_parser.cc and HeaderMatcher::Create, StringMatcher::Create in src/core/util/matchers.cc; grpc-go rejects an empty prefix, suffix or contains |
//	| RouteConfiguration | header matchers, as both data planes (xdsgrpc on outgoing metadata, xdsserver on incoming metadata, with one matcher) apply them: a header whose name ends in "-bin" is never present to a matcher (an inverted or present_match false matcher on it matches); a header sent with an empty value is present; content-type is "application/grpc"; a range_match reads the value as a decimal integer with an optional sign and ASCII whitespace around it | A28 | C-core and Envoy; the range value as C-core's absl::SimpleAtoi reads it (grpc-go matches -bin headers on their value, takes a header with an empty value for absent, and refuses whitespace around a range value) |
//	| RouteConfiguration | RLS lookup_service must resolve with a scheme gRPC knows (dns, passthrough, unix, unix-abstract, or one registered in this program) | A28 | grpc-go |
//	| Cluster | UpstreamTlsContext: transport_socket named envoy.transport_sockets.tls, common_tls_context set, a ca_certificate_provider_instance (current or deprecated field) or else system_root_certs in the validation context required | A29, A82 | C-core (no switch; grpc-go reads system_root_certs only with GRPC_EXPERIMENTAL_XDS_SYSTEM_ROOT_CERTS=true) |
//	| Cluster | UpstreamTlsContext sni (at most 255 bytes, longer rejected), auto_host_sni and auto_sni_san_validation are kept (security.Config.SNI, AutoHostSNI, AutoSNISANValidation) | A101 | as gRPC with its rollout switch on (grpc-go reads them only with GRPC_EXPERIMENTAL_XDS_SNI=true, a switch the gRFC calls temporary) |
//	| Listener | a DownstreamTlsContext's system_root_certs without a ca_certificate_provider_instance is rejected | A82 | |
//	| Cluster, Listener | CommonTlsContext: tls_params, custom_handshaker, validation_context_sds_secret_config rejected; tls_certificate_sds_secret_configs rejected when no identity provider instance is set (current or deprecated field) | A29 | C-core |
//	| Cluster, Listener | a TLS context that carries a secret, by any field, current or deprecated, is rejected with the path of that field, before any other rule is applied: tls_certificates; the deprecated tls_certificate_certificate_provider and validation_context_certificate_provider (alone or in combined_validation_context), whose typed_config may pack a Secret; custom_tls_certificate_selector; session_ticket_keys (servers); an SdsSecretConfig (tls_certificate_sds_secret_configs, validation_context_sds_secret_config alone or in combined_validation_context, session_ticket_keys_sds_secret_config) whose sds_config names a google_grpc service (channel and call credentials) or initial_metadata; and any field that the xDS APIs mark sensitive, at any depth, in packed messages of linked-in types too; on a server, in every filter chain, before anything else of the chain | A29 | neither (C-core and grpc-go ignore all of these but tls_certificates, and those too beside an identity provider instance; gRPC never takes a secret from a control plane, so one sent has left its keeper and is reported; CSDS shows the rejected resource with its sensitive fields redacted) |
//	| Cluster, Listener | ignored: alpn_protocols, key_log, a validation context's trusted_ca, watched_directory and match_typed_subject_alt_names, an SdsSecretConfig without credentials where the rules above allow one (beside an identity provider instance, in combined_validation_context, for session tickets); UpstreamTlsContext allow_renegotiation, max_session_keys, enforce_rsa_key_usage; DownstreamTlsContext session_timeout, disable_stateful_session_resumption, disable_stateless_session_resumption, full_scan_certs_on_sni_mismatch, prefer_client_ciphers | A29 | C-core |
//	| Cluster, Listener | CertificateValidationContext: verify_certificate_spki, verify_certificate_hash, require_signed_certificate_timestamp, crl and custom_validator_config rejected | A29 | |
//	| Cluster, Listener | match_subject_alt_names: a pattern required (custom rejected), safe_regex valid RE2 as written and once anchored, and without ignore_case; any value for exact, prefix, suffix and contains, the empty one included (an empty exact matches no SAN, an empty prefix, suffix or contains every SAN) | A29 | C-core: StringMatcherParse in src/core/xds/grpc/xds_common_types_parser.cc and StringMatcher::Create in src/core/util/matchers.cc; grpc-go rejects an empty prefix, suffix or contains, and accepts ignore_case on safe_regex and ignores it |
//	| Cluster, Listener | every certificate provider instance named must be in the bootstrap's certificate_providers, and have a name | A29 | C-core (grpc-go fails later, when it builds the credentials, and treats an empty client identity instance as none) |
//	| Cluster, Listener | each provider instance is read from its current field or, when that is unset, from its deprecated one (tls_certificate_certificate_provider_instance; validation_context_certificate_provider_instance, alone or in combined_validation_context); every other rule applies the same either way | A29 | C-core (grpc-go reads the deprecated fields only when the current ones name nothing or are invalid, and then skips the rules of the current ones) |
//	| Cluster | load_balancing_policy: a TypedStruct (xds or udpa) names a custom policy by the last segment of its type_url; used when a balancer of that name is registered with gRPC in this program, whose parser must accept the struct as JSON; skipped otherwise | A52 | grpc-go |
//	| Cluster | client_side_weighted_round_robin: error_utilization_penalty not negative; weight_update_period at least 100ms | A58 | grpc-go |
//	| ClusterLoadAssignment | an endpoint's metadata filter_metadata "envoy.lb" field hash_key, when a string, is its ring_hash key (Endpoint.HashKey); other metadata is not read | A76 | grpc-go (as it runs by default: GRPC_XDS_ENDPOINT_HASH_KEY_BACKWARD_COMPAT unset) |
//	| ClusterLoadAssignment | policy.drop_overloads: a category is required (empty rejected) | xDS endpoint.proto (category has min_len 1) | C-core (grpc-go accepts an empty category; the category is what load reports count drops under, and the xDS API requires one) |
//	| ClusterLoadAssignment | an lb_endpoint whose health_status is not UNKNOWN, HEALTHY or DRAINING (UNHEALTHY, TIMEOUT, DEGRADED, or a value the API lacks) is left out before anything else of it is read: its weight, its endpoint, its addresses, whether they repeat another's | A27 | C-core (grpc-go keeps every endpoint and never checks an address; a DRAINING endpoint is checked and kept, as C-core keeps it, though no RPC goes to it) |
//	| ClusterLoadAssignment | an address is a socket_address with an IP address; its port is port_value, at most 65535, and 0 with a named_port or no port (an address nothing connects to, which counts in the check for repeated addresses) | A27 | C-core (grpc-go takes any address) |
//	| Cluster | LOGICAL_DNS: load_assignment with one locality of one endpoint whose socket_address has an address, no resolver_name and a port_value from 1 to 65535 (a named_port is rejected) | A37 | neither for a port above 65535 (C-core and grpc-go accept it and make a name no connection reaches; a NACK keeps the last good cluster in use, where accepting would replace it with one whose every RPC fails); grpc-go for port 0 (C-core accepts an explicit port_value 0) |
//	| Listener, RouteConfiguration, Cluster | every google.protobuf.Duration gRPC reads (a route's max_stream_duration and grpc_timeout_header_max, the HttpConnectionManager's common_http_protocol_options.max_stream_duration, retry_back_off's base_interval and max_interval, a fault filter's fixed_delay, outlier_detection's interval, base_ejection_time and max_ejection_time, weighted_round_robin's periods): seconds in [0, 315576000000] and nanos in [0, 999999999], else rejected; a duration beyond what a time.Duration holds (about 292 years) is the largest time.Duration, and so is ten times a retry base_interval that large (the default max_interval); arithmetic on them (a retry's doubling backoff, an ejection's base_ejection_time times its multiplier) saturates | A31, A33, A44, A50, A58 | C-core: ParseDuration in src/core/xds/grpc/xds_common_types_parser.cc and its saturating Duration (grpc-go takes a negative duration as it is, and its ten-fold base_interval wraps to a negative max_interval, with which it retries at once) |
//	| RouteConfiguration | retry_policy.retry_on: each condition gRPC knows kept once, in the order first named, whatever the length of the list | A44 | C-core (a set of status codes) |
//	| Listener, RouteConfiguration | a fault filter's abort.grpc_status beyond 16 is rejected; an abort code header (x-envoy-fault-abort-grpc-request) that is no status code aborts nothing | A33 | C-core: GenerateFilterConfig in src/core/xds/grpc/xds_http_fault_filter.cc, and its fault filter's header reading (grpc-go maps an unknown code to UNKNOWN) |
//	| RouteConfiguration | a weighted_clusters cluster without a weight, a hash_policy header with an empty header_name, and a regex_rewrite without a pattern or with an empty regex are rejected | A28, A42 | C-core: RouteActionParse in src/core/xds/grpc/xds_route_config_parser.cc (grpc-go reads a missing weight as 0 and leaves the cluster out, and takes the empty name and regex) |
//	| Cluster | outlier_detection.interval of 0 is rejected | A50 | neither (C-core and grpc-go accept it and run the ejection sweep again at once, without pause, for as long as the cluster is used; the xDS API requires more than 0) |
//
// Rules that predate these (routes, clusters, endpoints) are documented on
// the types and fields they produce.
package xdsresource
