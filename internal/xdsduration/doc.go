// Package xdsduration reads the google.protobuf.Duration fields of xDS
// resources as gRPC C-core reads them (ParseDuration in
// src/core/xds/grpc/xds_common_types_parser.cc): seconds in
// [0, 315576000000] and nanos in [0, 999999999], anything else an error
// that rejects the resource. A negative duration, which the protobuf
// runtime would turn into a negative time.Duration, is never taken, and
// the largest ones, beyond what a time.Duration holds (about 292 years),
// are saturated to the largest time.Duration, as C-core saturates them,
// never wrapped to a negative value.
//
//	| value                          | Parse                         |
//	|--------------------------------|-------------------------------|
//	| nil                            | 0, no error (the caller's default applies before) |
//	| seconds < 0 or nanos < 0       | error                         |
//	| seconds > 315576000000         | error                         |
//	| nanos > 999999999              | error                         |
//	| beyond math.MaxInt64 ns        | math.MaxInt64 ns              |
//
// Arithmetic on what Parse returns saturates too: Times multiplies
// without wrapping.
package xdsduration
