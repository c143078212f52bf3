// Package rbac is the RBAC engine of xDS-enabled servers (gRFC A41): it
// compiles the rules of an envoy.extensions.filters.http.rbac.v3.RBAC
// config and decides, per RPC, whether the RPC may go on; it runs the
// audit loggers of the rules (gRFC A59). What the rules match is
// documented in package httpfilter, which runs the engine as the RBAC
// filter.
package rbac
