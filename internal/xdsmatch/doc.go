// Package xdsmatch runs the string and header matchers of xDS resources
// (envoy.type.matcher.v3.StringMatcher, envoy.config.route.v3.HeaderMatcher)
// as gRPC C-core runs them (StringMatcher::Match and HeaderMatcher::Match
// in src/core/util/matchers.cc). Three parts of xdslens match with it,
// each compiling its matchers once per configuration and matching on
// every RPC or handshake:
//
//	user                               what it matches
//	routematch (clients and servers)   route paths and header matchers (gRFC A28, A36)
//	httpfilter/internal/rbac           url_path, requested_server_name, principal_name
//	                                   and header matchers of RBAC policies (gRFC A41)
//	sanmatch (for xdscreds)            a cluster's match_subject_alt_names against the
//	                                   server certificate's SANs (gRFC A29)
//
// A String matches a value v as its kind says:
//
//	kind        matches v when
//	exact       v equals the value
//	prefix      v starts with the value
//	suffix      v ends with the value
//	contains    the value is within v
//	safe_regex  the RE2 expression matches the whole of v (ignore_case is not applied)
//
// Every value is allowed, the empty one included, as C-core's
// StringMatcher::Create allows it: an empty exact matches only the empty
// string, and an empty prefix, suffix or contains matches every value.
// A regular expression must be valid as written and once anchored
// (matcher.CheckWholeRegex): one that compiles only once anchored, such
// as "a)|(b", is rejected, and so is one that compiles only as written,
// nested 999 levels deep, which anchoring takes past Go's limit.
// ignore_case folds the ASCII letters only, as C-core does with absl's
// ASCII functions (package asciifold): the value is lowered once, when
// it is compiled.
//
// A Header applies a String to a header's value, or matches on its
// presence or on a range of integers; an absent header matches no
// matcher but present_match false, inverted or not. How a header's value
// is looked up (the joining of repeated values, "-bin" headers,
// content-type) is the caller's.
//
// Matching allocates nothing, takes no lock and calls no interface
// method; compiled matchers are immutable values, shared by the RPCs or
// handshakes that use them.
//
// Package matcher (xdsclient/xdsresource/matcher) says which matchers are
// valid, and holds them in the resources that CSDS shows, tests compare and
// connection sharing keys on. A compiled matcher holds a regexp and lowered
// values that have no place in those values, and serves only xdslens's own
// data plane: so it is compiled here, under internal/, from the values
// package matcher validated.
package xdsmatch
