// Package routematch finds the route of an RPC among the routes of one xDS
// virtual host (gRFC A28): each route's path, header and runtime-fraction
// matchers are tried in order, and the first route whose matchers all
// match wins. What the route then does is the caller's: a client's
// routing (package xdsgrpc) sends the RPC to the route's cluster; an
// xDS-enabled server (package xdsserver) serves it when the route's
// action is non_forwarding_action and fails it otherwise (gRFC A36).
//
// The two sides match alike: gRFC A36 gives a server's routes the
// client's matching, and gRPC C-core runs one function
// (XdsRouting::GetRouteForRequest) for its client's config selector and
// its server's. They differ in what they give it, not in how it matches:
//
//	                       client (xdsgrpc)              server (xdsserver)
//	headers read           the RPC's outgoing metadata   the RPC's incoming metadata
//	virtual host chosen by the channel's authority,      each RPC's :authority,
//	                       once per config               per RPC
//	a matched route        its cluster(s)                served if non_forwarding_action,
//	                                                     else UNAVAILABLE
//
// The virtual host is chosen before this package is called, by
// xdsconfig.FindVirtualHost on both sides. A Table is told which metadata
// its header matchers read (Outgoing or Incoming).
//
// Where gRPC's implementations differ, C-core is followed: a header whose
// name ends in "-bin" is never present to a matcher, a header sent with an
// empty value is present (grpc-go takes it for absent), "content-type" is
// always "application/grpc", the values of a header sent several times
// are joined with ",", a runtime fraction of N per million matches when a
// random number below one million is less than N (so 0 never matches), a
// safe_regex path matcher is case-sensitive whatever case_sensitive says,
// an exact, prefix, suffix or contains header matcher may have an empty
// value (an empty prefix, suffix or contains matches every value of a
// header that is present; grpc-go rejects the route configuration), and a
// route whose cluster comes from a header (cluster_header) never matches,
// as gRPC ignores it.
//
// A Table is compiled once per configuration and then used by every RPC,
// concurrently and without locks. Path matchers depend on the method
// alone, so a Table of more than ScanAtMost routes (or with a safe_regex
// path) remembers, for up to MaxRememberedMethods methods,
// which routes' paths match it: an RPC then evaluates only those routes'
// header and fraction matchers, in order, instead of every route's path
// (for 1,000 routes, tens of nanoseconds instead of microseconds).
// Methods are remembered in a copy-on-write map read without a lock.
//
// Paths and header values are matched by package xdsmatch, which
// routes, RBAC and SAN checks share: matching a path allocates nothing.
// Each header a matcher reads costs one allocation, on either side, and
// more when it was sent several times: grpc-go v1.85 hands out a header's
// values only as a copy (metadata.ValueFromOutgoingContext and
// ValueFromIncomingContext).
package routematch
