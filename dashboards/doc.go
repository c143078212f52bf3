// Package dashboards builds the Grafana dashboards and the Prometheus
// alerting rules that watch xdslens's xDS clients, from the metrics that
// package telemetry exports (the gRFC A78 instruments and xdslens's own
// xdslens.xds_client.* instruments, as OpenTelemetry's Prometheus exporter
// names them).
//
// Two dashboards are built with grafana-foundation-sdk:
//
//   - [Overview], "xDS client overview": scrape health of each process,
//     connection to each xDS server, server failures and ADS streams,
//     valid and invalid resource updates, resources by cache state, the
//     resources that are not ACKed, the server each authority uses
//     (fallback), control-plane fetch latency and outcomes, watcher
//     notifications, the data plane (the RPCs of the xdslens channels the
//     clients route, from package telemetry/dataplane: RPCs by cluster and
//     outcome, failed picks, calls by status code, drops, in-flight RPCs
//     against max_requests, config updates and errors), latency and
//     errors by cluster (from gRFC A66's per-call instruments,
//     dataplane.WithPerCallMetrics: attempt latency p50 and p99 by cluster
//     and by locality, the slowest clusters, attempts and their error
//     share by cluster), resilience
//     (ejections by outlier detection and the share of each cluster's
//     endpoints ejected, retries by code and as a share of calls, injected
//     faults), xDS-enabled servers
//     (from telemetry.NewServerMetrics: serving state by address,
//     connections by filter chain, refused and drained connections,
//     handshake failures, RBAC decisions by policy), and load reporting
//     (LRS reports, streams and calls).
//   - [DrillDown], "xDS resource drill-down": the cache by authority,
//     resource type and state over time, one panel per resource type, and
//     updates, latency and notifications per type.
//
// Both have the variables datasource, job, instance, target, server,
// resource_type and authority ([WithGroupLabel] adds one for a label such
// as cluster before job); every query filters by the fleet variables, and
// every panel has a description that says what a bad value means and what
// to do about it. Every panel draws a cache state in the color of
// [CacheStateColor]. Each panel that shows the cause of an alert links to
// the alert's section of the runbook ([AlertOptions].RunbookURL).
//
// [RecordingRules] returns the recording rules of the series the
// dashboards read ([RecordConnected], [RecordResources],
// [RecordAuthorityServer], [RecordInFlight], [RecordMaxRequests],
// [RecordServerServing]);
// [AlertRules] the alerting rules, on the clients, on the data plane and
// on xDS-enabled servers, with the thresholds and job selector of
// [AlertOptions]; [RuleFile] renders both as the rule file that
// Prometheus loads. Each alert has a
// section in RUNBOOK.md beside this file.
//
// The generated files are committed beside the package and written by
// [Files], which `go generate ./dashboards/...` runs through ./cmd/gen: the
// dashboard JSON that Grafana imports as is and a provisioning example;
// the rule file and a prometheus.yml that loads it; the same rules and
// dashboards as a monitoring mixin (mixin.libsonnet, prometheus_alerts.yaml,
// prometheus_rules.yaml, dashboards_out/), the layout kube-prometheus and
// the monitoring-mixins projects use; and a Kubernetes PrometheusRule,
// PodMonitor and ServiceMonitor for the Prometheus Operator. A test fails
// when the committed files differ from what [Files] returns.
package dashboards

//go:generate go run ./cmd/gen
