// Package history keeps, for each xdslens channel, its last configs: when
// each came, what changed from the one before in the parts that route
// RPCs, and the names and versions of the resources behind it, so that
// "what changed before the errors began" has an answer after the fact.
//
// A channel of package xdsgrpc records every config it starts using, and
// every error that fails its whole config, in a Recorder that keeps the
// last xdsgrpc.WithConfigHistory entries (DefaultSize, 16, by default);
// xdsgrpc.Builder.ConfigHistory lists its live channels' histories, and
// package admin serves them on the admin port (admin.WithConfigHistory).
//
// # What an entry says
//
// The JSON names of Channel, Entry, Resource, Change and Error are stable.
// An entry lists:
//
//   - the resources behind the config: the Listener (lds), the route
//     configuration (rds, unless inline), then by name each usable cluster
//     (cds) and its endpoints (eds), each with the version_info of the
//     response that brought it as the config uses it;
//   - the changes from the channel's last config (errors between them
//     aside), each a kind (listener, route_config, virtual_host, route,
//     cluster), a name, an op (added, removed, changed) and the thing in
//     words before and after: the Listener's route configuration source,
//     HTTP filters and max_stream_duration; the virtual host's name,
//     domains, retry policy and filter overrides; each route's matchers,
//     action, timeout, retry policy, hash policies and filter overrides
//     (routes that an insertion or removal moves are aligned, so that one
//     inserted route is one change); each cluster's type, policy, usable
//     endpoints by priority, error and resolution note;
//   - or, for a failed config, the code the dependency manager got and
//     the message the channel's RPCs fail with.
//
// # Memory
//
// An entry lists at most MaxChanges changes and MaxResources resources,
// counting the others, and each of its strings is at most MaxText bytes:
// whatever the control plane sends, an entry holds at most MaxChanges
// times (3 MaxText + 80) plus MaxResources times (2 MaxText + 48) bytes,
// and its error, about 45 KiB (42 KiB measured with every string and list
// at its bound), and a channel's history its size times that. An entry of
// a small config (a listener, a route configuration, two clusters and
// their endpoints) holds about 0.9 KiB: 14 KiB for the 16 entries kept by
// default (TestEntryCost measures both).
//
// # Cost
//
// Recording a config makes one pass over its clusters, the one
// xdsconfig.Diff makes (shared with the hooks' ConfigChanged when both
// run), lists the resources without sorting every cluster name (after an
// endpoints update, only versions change), and describes only what
// changed; routes are compared only when the virtual host changed.
// BenchmarkRecordEndpointChange records an endpoints update of one
// cluster among n: 4.5 µs at 10 clusters, 26 µs at 1,000, 0.2 to 1 ms at
// 10,000 on a busy 2-vCPU machine (where the dependency manager's own
// update takes 0.6 to 2 ms), with 32 allocations (2.7 KiB), whatever n.
// xdsgrpc.WithConfigHistory(0) turns recording off.
package history
