// Package lrs reports load to an LRS server
// (envoy.service.load_stats.v3.LoadReportingService), as gRPC's xDS
// clients do for a Cluster whose lrs_server is self.
//
// A data plane records loads in a [Store], one [ClusterLoad] per cluster
// and EDS service name; a [Reporter] keeps a stream open to the server and
// sends what the Store recorded. Most programs get both through
// xdsclient.Client.ReportLoad, which shares one stream per server among
// its users and stops it when the last one lets go.
//
//	load, release, err := client.ReportLoad(res.Server, cluster.Name, cluster.EDSServiceName)
//	defer release()
//	load.CallStarted(locality)
//	// ... the call ...
//	load.CallFinished(locality, err)
//
// # The stream
//
// The first request carries the node, with the client feature
// [FeatureSendAllClusters]. Each LoadStatsResponse sets what is reported
// from then on; the first one starts the reports:
//
//	response field            effect
//	load_reporting_interval   time between reports; a change applies from the last report sent
//	clusters                  the cluster names to report (loads of others stay in the Store)
//	send_all_clusters         report every cluster of the Store
//
// A response without a positive load_reporting_interval ends the stream
// as a failure. A stream that ends after a valid response is opened again
// at once; one that ends before is retried after a backoff.
//
// # What a report carries
//
// One ClusterStats per cluster and EDS service with something to report,
// with what was recorded since that cluster's previous report:
//
//	ClusterStats field                 from
//	cluster_name, cluster_service_name  the ClusterLoad
//	total_dropped_requests              CallDropped, any category ("" included)
//	dropped_requests                    CallDropped, per non-empty category
//	load_report_interval                time since the cluster's previous report (its creation for the first)
//	upstream_locality_stats             per Locality:
//	  total_issued_requests             CallStarted, less CallNotStarted
//	  total_successful_requests         CallFinished with a nil error
//	  total_error_requests              CallFinished with an error
//	  total_requests_in_progress        started and not finished, at the time of the report
//	  load_metric_stats                 CallServerLoad: per name, count and sum of values
//
// Loads recorded while no stream is open stay in the Store and go into the
// first report of the next stream; a report that cannot be written is put
// back. A restart of the server therefore loses no count and sends none
// twice, except a report written just before the connection broke, which
// counts as sent (LRS has no acknowledgement).
//
// # Cost
//
// The ClusterLoad methods are meant for every RPC: once a locality, drop
// category or metric name has been seen, recording takes no lock and
// allocates nothing (atomic counters found through a copy-on-write table);
// the first use of a new locality copies the table. See the benchmarks
// in bench_test.go.
package lrs
