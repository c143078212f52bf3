// Package xdsconfig is the dependency manager of gRFC A74: for one
// listener name it watches, through an xdsclient.Client, everything a gRPC
// channel needs to route RPCs (the Listener, its RouteConfiguration, the
// clusters the routes of the virtual host for the channel's authority name,
// the clusters that aggregate clusters expand to, and their endpoints), and
// delivers it as one immutable Config whenever every resource it needs has
// been heard from, and again on every change.
//
//	m := xdsconfig.Watch(client, "listener", "svc.example.com", xdsconfig.WatcherFuncs{
//		OnUpdate: func(c *xdsconfig.Config) { ... }, // route with c
//		OnError:  func(err error) { ... },           // fail RPCs with err
//	})
//	defer m.Stop()
//
// # What it watches
//
//   - LDS: the listener. It must be an API listener.
//   - RDS: the route configuration the listener names; none when the
//     listener carries it inline (Config.RouteConfigName is then "").
//   - The virtual host whose domains match the authority best
//     (FindVirtualHost, gRFC A27).
//   - CDS: every cluster its routes name, directly or in weighted_clusters.
//     A cluster_header or cluster_specifier_plugin route names its cluster
//     per RPC: none here.
//   - Aggregate clusters (gRFC A37), expanded depth first: each aggregate's
//     slot lists its leaf clusters in priority order, each once, and every
//     cluster reached has a slot of its own.
//   - EDS: the endpoints of each EDS cluster (Cluster.EDSName); for a
//     LOGICAL_DNS cluster, a resolution of its host name (WithResolver),
//     made again when Manager.ResolveNow asks (at most once per
//     WithDNSMinInterval), after a failure (with WithDNSBackoff), and every
//     WithDNSRefreshInterval if one is set.
//
// What no longer needs watching is unwatched, except that what the config
// in use (the last one delivered) needs stays watched until a config without
// it is delivered: a route that moves from cluster A to cluster B keeps A
// watched until the config with B is out.
//
// # When it emits
//
// Watcher.Update comes only when the listener, its route configuration, a
// virtual host for the authority, every cluster reachable from its routes
// and their endpoints have all been heard from, each with a resource or an
// error: a config never lacks the slot of a cluster a route names (gRFC
// A74's rule against config tears). While a new route configuration waits
// for its clusters, nothing is delivered and the last config stays in use.
// After that, every change makes a new Config, a change of a resolution
// note included; one equal to the last is not delivered.
//
// Configs share what did not change: the resources, and the cluster slots,
// which stay the same pointers. Diff tells what changed between two.
//
// Watcher calls are serialized, in order, never made under a lock, and may
// call Stop. They run on the manager's goroutine, not on the xDS client's,
// so a slow Watcher does not hold up the client: configs made while it runs
// replace one another, and it gets the latest. Once Stop returns, the
// Watcher gets no call and no goroutine of the manager is left; called from
// the Watcher, Stop returns at once.
//
// An endpoint change (EDS, DNS, or an ambient error of an endpoint or
// cluster resource) makes again only the slots of the clusters that use
// it; a change of the listener, the route configuration or a cluster walks
// the whole graph.
//
// # Errors
//
// Every error and resolution note names the resource, the cause and the
// xDS node ID, in at most MaxMessageLen bytes. Errors are *ResourceError, a
// gRPC status with code UNAVAILABLE (gRFC A54); ResourceError.Cause keeps
// what the xDS client reported, with its own code. What each event does
// (gRFC A88 decides, through the xDS client, which errors are ambient):
//
//	event                                   | config                                       | RPCs routed by it
//	----------------------------------------+----------------------------------------------+--------------------------------
//	Listener ResourceChanged error          | Error: LDS resource "L": <cause>             | fail UNAVAILABLE
//	Listener that is not an API listener    | Error: LDS resource "L": not an API listener | fail UNAVAILABLE
//	RouteConfiguration ResourceChanged error| Error: RDS resource "R": <cause>             | fail UNAVAILABLE
//	no virtual host for the authority       | Error: RDS resource "R" (LDS "L" if inline): | fail UNAVAILABLE
//	                                        | could not find VirtualHost for "authority"   |
//	Cluster ResourceChanged error           | that slot's Err: CDS resource "C": <cause>;  | to C: fail UNAVAILABLE; an
//	                                        | its endpoints are unwatched                  | aggregate over C skips it
//	aggregate graph with a loop, deeper     | that aggregate's Err (and its aggregates',   | to it: fail UNAVAILABLE
//	than MaxAggregateDepth, or no leaf      | but for no leaves)                           |
//	endpoints ResourceChanged error         | leaf kept, Endpoints nil, note:              | to it: fail, with the note
//	                                        | EDS resource "E": <cause>                    |
//	endpoints with no locality, or          | note: EDS resource "E": contains no          | as the endpoints allow
//	localities without endpoints            | localities / contains empty localities: [..] |
//	DNS resolution failure                  | Endpoints nil, note: DNS resolution failed   | to it: fail, with the note
//	                                        | for "host:port": <cause>                     |
//	ambient error of Listener/RouteConfig   | note of every leaf: LDS/RDS resource ...     | unchanged; a failure to reach
//	ambient error of a Cluster/endpoints    | note of that cluster's leaf: CDS/EDS ...     | the endpoints carries the note
//	AmbientError(nil), a new valid resource | that resource's part of the notes goes       |
//	no ambient error at all                 | note: xDS node ID:<id>                       |
//
// A whole-config error is delivered for each event that causes it (unless
// a newer config or error replaces it before the Watcher takes it); a
// later Update ends it.
// A leaf's note is the notes of its listener, route configuration, cluster
// and endpoints joined with "; ".
//
// # Choices that follow gRPC C-core
//
// Where the gRFCs leave a choice, the manager does what C-core's
// XdsDependencyManager does:
//
//   - Domain matching ignores ASCII case; between equally specific matches
//     the first virtual host wins.
//   - A failed listener or route configuration keeps every other watch, so
//     the config is whole again as soon as it comes back.
//   - A child of an aggregate whose Cluster resource failed contributes no
//     leaf; an aggregate left with none fails. A graph deeper than 16
//     levels fails every aggregate on the way, and the clusters beyond and
//     the rest of the children of the aggregate where it is found are not
//     watched.
//   - An endpoints error leaves the cluster usable with no endpoints and a
//     note, not an error slot; endpoints without localities get a note, and
//     so do localities without endpoints, each named once, in the order of
//     their names.
//   - A failed DNS resolution leaves the cluster with no endpoints, whatever
//     an earlier one found. Resolution is requested by the channel, at most
//     once per 30s by default, and retried after failures from 1s, 1.6
//     times longer each time, up to 120s.
//   - The note of a cluster with no ambient error is "xDS node ID:<id>".
//   - When the listener names another route configuration, the old one is
//     unwatched at once.
//
// Where it departs from C-core, on purpose:
//
//   - A loop in an aggregate graph is an error of every aggregate whose
//     graph contains it. C-core has no loop check: a cluster it reaches
//     twice contributes to the first aggregate only, so an aggregate of a
//     diamond may end up with no leaves; here every aggregate has its own
//     leaves.
//   - The note of a LOGICAL_DNS cluster carries the ambient errors of the
//     listener, the route configuration and the cluster too, as gRFC A88
//     says (C-core gives only the DNS note).
//   - No config is made from a listener and a route configuration it no
//     longer names.
//   - An ambient error of an EDS resource joins the note its content earned
//     (no localities, empty localities) rather than replacing it, and its
//     end leaves that note; C-core keeps one note per EDS resource, which
//     the last of the two events sets.
//   - Messages are bounded, and name the node.
//   - What the config in use needs (its clusters, their EDS resources and
//     DNS names) stays watched until a config without it is delivered.
//     C-core drops at once an EDS resource or DNS name that the current
//     resources no longer name, and keeps a cluster watched, with a slot
//     in every config, for as long as its ClusterSubscription is held: by
//     the config selector in use and by each RPC routed to the cluster
//     until the RPC commits (gRFC A74). Here an RPC keeps its cluster's
//     policy (package xdsgrpc) but not the cluster's watches, so a policy
//     that serves RPCs routed before a route configuration dropped its
//     cluster gets no update of that cluster's endpoints meanwhile.
//   - Clusters are named by routes and weighted clusters only: there is no
//     subscription for a cluster that an RPC names at the time of the call
//     (C-core subscribes to the clusters its RLS plugin returns through
//     GetClusterSubscription).
package xdsconfig
