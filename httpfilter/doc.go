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
// received, wrapper included. Package xdsresource validates every config
// and override of a registered type with the filter's parser, so that a
// resource with a config the filter cannot use is NACKed, and keeps the
// configs as received; the data plane parses them again when it builds
// the filter for a route.
//
// Built in, and registered when this package is imported:
//
//	| filter | config type URL                                          | override type URL                                             | side    |
//	|--------|----------------------------------------------------------|---------------------------------------------------------------|---------|
//	| router | envoy.extensions.filters.http.router.v3.Router           | none                                                          | both    |
//
// The router ends every filter chain and does nothing itself: the data
// plane routes the RPC.
package httpfilter
