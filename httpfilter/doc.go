// Package httpfilter is the registry of the xDS HTTP filters that gRPC
// data planes run (gRFC A39), shared by clients and servers.
//
// An HTTP filter is named in a Listener's HttpConnectionManager by the
// type URL of its config (http_filters[i].typed_config), and may be
// configured again, per virtual host, route or weighted cluster, by an
// override in typed_per_filter_config. A [Filter] parses both; the
// interfaces of each side add what running it takes there:
//
//	| interface       | side                  | runs the filter as                                   |
//	|-----------------|-----------------------|------------------------------------------------------|
//	| [Filter]        | both                  | parses its config and its overrides                  |
//	| [ServerFilter]  | xDS-enabled servers   | a [ServerInterceptor] per route, called before every RPC's handler |
//
// Filters are registered by the type URLs of their configs ([Register])
// and looked up by the type URL found in a resource ([Get]); a config
// wrapped in a udpa.type.v1.TypedStruct or xds.type.v3.TypedStruct is
// looked up by the type URL inside it, and given to the filter as
// received, wrapper included. Package xdsresource/filterconfig validates
// every config and override of a registered type with the filter's
// parser, so that a
// resource with a config the filter cannot use is NACKed, and keeps the
// configs as received; the data plane parses them again when it builds
// the filter for a route.
//
// Built in, and registered when this package is imported:
//
//	| filter | config type URL                                          | override type URL                                             | side    |
//	|--------|----------------------------------------------------------|---------------------------------------------------------------|---------|
//	| router | envoy.extensions.filters.http.router.v3.Router           | none                                                          | both    |
//	| RBAC   | envoy.extensions.filters.http.rbac.v3.RBAC (gRFC A41)    | envoy.extensions.filters.http.rbac.v3.RBACPerRoute            | servers |
//
// The router ends every filter chain and does nothing itself: the data
// plane routes the RPC. RBAC decides whether each RPC may go on, as the
// section below says; an RPC it denies fails with PERMISSION_DENIED and the
// message "Unauthorized RPC request rejected.", as in gRPC C-core, which
// says nothing of the policies; the decision, the policy that matched and
// gRFC A59's audit loggers are reported to the server (ServerEnv.Authz,
// ServerEnv.Stdout). An RBACPerRoute override replaces the filter's rules
// for its scope; one without rbac turns RBAC off there.
//
// # RBAC
//
// What each permission and principal of an RBAC policy matches, for one
// RPC (gRFC A41); a policy matches when one of its permissions and one of
// its principals match:
//
//	| rule                                     | matches                                                              |
//	|------------------------------------------|----------------------------------------------------------------------|
//	| and_rules / and_ids                      | every rule inside (an empty list matches)                            |
//	| or_rules / or_ids                        | one rule inside (an empty list matches nothing)                      |
//	| not_rule / not_id                        | the rule inside does not match                                       |
//	| any                                      | always, also when written any: false (as C-core; Envoy rejects it)   |
//	| header                                   | the request header, as below                                         |
//	| url_path                                 | the full method name, "/pkg.Service/Method", canonical (below)       |
//	| destination_ip                           | the server's address of the connection is in the CIDR range         |
//	| destination_port                         | the server's port of the connection                                  |
//	| metadata                                 | never (Envoy metadata has no gRPC equivalent); always when inverted  |
//	| requested_server_name                    | the empty string                                                     |
//	| source_ip, direct_remote_ip, remote_ip   | the peer's address of the connection is in the CIDR range           |
//	| authenticated without principal_name     | a connection with TLS                                                |
//	| authenticated.principal_name             | on a TLS connection: one of the peer certificate's URI SANs, as the certificate spells them (C-core); if it has none, one of its DNS SANs; if it has neither, its subject (RFC 2253); without a certificate, "" |
//
// A policy with no permissions, or no principals, matches no RPC. Rules
// with no policy deny every RPC under ALLOW and allow every one under
// DENY; an RBAC config without rules, or with the action LOG, enforces
// nothing (as C-core, and gRFC A41 for LOG).
//
// url_path compares the path as gRPC C-core canonicalizes it before its
// authorization matchers: percent-escapes decoded once, a missing leading
// "/" added, empty and "." segments dropped, ".." segments resolved; a
// path that climbs above the root matches no url_path matcher. So a DENY
// rule on "/pkg.Admin/" also holds for "//pkg.Admin/Reset" or
// "/x/../pkg.Admin/Reset", which grpc-go's server dispatches to no
// registered method but hands to a grpc.UnknownServiceHandler (grpc-go's
// own RBAC matches the path as sent). The ":path" header matcher reads
// the path as sent, as in C-core.
//
// Header matchers read the RPC's metadata as gRPC received it, with the
// aliases gRFC A41 gives: ":path" is the method, ":method" is "POST",
// "host" is ":authority", "te" is never present; values of a header sent
// several times are joined with ","; a binary header ("-bin") is matched
// in its base64 form, without padding, as on the wire. A header matcher
// other than present_match fails on an absent header, inverted or not.
// String matchers with ignore_case compare without ASCII case; a
// safe_regex must match the whole value and ignores ignore_case. String
// and header matchers are those of routes and SAN checks (package
// internal/xdsmatch).
//
// Where gRPC's implementations differ, C-core is followed: the policies of
// a rule set are tried in the order of their names, so the policy that
// matched is the first that matches by name (grpc-go tries them in a
// random order). Two rules follow gRFC A41 and grpc-go instead:
// authenticated.principal_name looks at DNS SANs only when the
// certificate has no URI SAN, and at the subject only when it has
// neither (C-core looks at all three, so a certificate whose URI SAN is
// another identity passes there on a matching DNS SAN); and an
// IPv4-mapped IPv6 CIDR range holds the IPv4 peers it maps
// (::ffff:10.0.0.0/104 holds 10.1.2.3), where C-core, which compares
// address families, never matches it. A string matcher may have an
// empty exact, prefix, suffix or contains value, as in C-core, and an
// empty prefix, suffix or contains matches every value (grpc-go rejects
// the config). An audit event names the RBAC
// filter's instance name as its policy (gRFC A59; grpc-go leaves it
// empty), the matched policy as its rule, and the peer's SPIFFE ID as its
// principal.
//
// The stdout audit logger writes one JSON line per event, in gRPC
// C-core's form: {"grpc_audit_log":{"timestamp":"<RFC 3339>","rpc_method":
// ...,"principal":...,"policy_name":...,"matched_rule":...,"authorized":
// true|false}}. Custom loggers are grpc-go's: implement
// google.golang.org/grpc/authz/audit's LoggerBuilder, register it with
// audit.RegisterLoggerBuilder, and name it in a TypedStruct whose type_url
// ends with its name; its config is the TypedStruct's value as JSON.
//
// Deciding allocates nothing unless a header matcher reads a header that
// the RPC has (gRPC's metadata API copies the values, once per header and
// RPC here), or an audit logger runs.
package httpfilter
