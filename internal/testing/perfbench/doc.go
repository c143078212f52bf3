// Package perfbench measures the xDS client at scale against a real
// go-control-plane server on loopback, next to two floors measured in the
// same run, so that machine noise cancels out of the ratios.
//
// The workload: N EDS clusters c0..cN-1 (EDS over ADS, round robin, a
// connect timeout), N = 1,000 and 10,000, served from go-control-plane
// snapshots, with one watcher per cluster that does no work. Each
// benchmark is named BenchmarkPerf/n=N/OP/IMPL:
//
//   - subscribe/client: a fresh client registers N watches; an operation
//     ends when every watcher has its cluster and the server has the ACK.
//   - update-all/client: a new snapshot in which every cluster changed;
//     until every watcher has the new value and the server has the ACK.
//   - update-one/client: a new snapshot, full state resent, in which one
//     cluster changed; until that watcher has it and the server has the ACK.
//     No other watcher may be notified: the benchmark fails if one is.
//   - OP/delta: the client over incremental xDS against go-control-plane's
//     linear cache, whose updates name the clusters that changed.
//   - OP/delta-push: over delta against a server in the benchmark
//     that does only the work of what changed, which measures the client's
//     own cost. update-one also runs at N = 100,000, over both protocols.
//   - retained-heap: the heap a client retains once it holds the N
//     clusters, as a multiple of the response's wire size (heap/wire), at
//     N = 1,000, 10,000 and 100,000.
//   - OP/raw-ads: the floor for OP, a bare ADS stream made with the
//     generated gRPC client against the same server and snapshots, that
//     only receives, unpacks every resource into a Cluster and ACKs.
//   - OP/ack-only: the floor under any State of the World client, for the
//     updates: a stream that receives each response as bytes, reads only
//     its version and nonce and ACKs, decoding and keeping nothing.
//   - unmarshal: the floor of plain proto.Unmarshal of the same
//     DiscoveryResponse bytes plus unpacking every Any into a Cluster.
//
// Every operation includes the server's work (building the snapshot,
// marshalling the response), which the client and raw-ads rows share.
// Besides ns/op, B/op and allocs/op, each benchmark reports resources/s
// and the client rows report requests/op, the CDS requests the server
// received per operation.
//
// Run everything and print the table with the ratios to both floors:
//
//	scripts/perftable.sh            # go test -bench -count 6, benchstat, perftable
//
// or by hand:
//
//	go test -run '^$' -bench BenchmarkPerf -benchmem -count 6 ./internal/testing/perfbench | tee perf.txt
//	benchstat perf.txt
//	go run ./internal/testing/perfbench/perftable perf.txt
//
// TestRetainedHeap checks the heap the client retains once it holds 10,000
// clusters against the size of the response on the wire, and
// TestSubscribeCoalesced that N watches become a handful of requests.
package perfbench
