package lrs

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	lrsv3 "github.com/envoyproxy/go-control-plane/envoy/service/load_stats/v3"
	"google.golang.org/protobuf/types/known/durationpb"
)

// reportConfig is what the server asked for in its latest
// LoadStatsResponse.
type reportConfig struct {
	// clusters are the cluster names to report, unless all is set.
	clusters []string
	all      bool
	interval time.Duration
}

// parseResponse validates one LoadStatsResponse.
func parseResponse(m *lrsv3.LoadStatsResponse) (reportConfig, error) {
	d := m.GetLoadReportingInterval()
	if d == nil {
		return reportConfig{}, fmt.Errorf("LoadStatsResponse.load_reporting_interval: missing")
	}
	if err := d.CheckValid(); err != nil {
		return reportConfig{}, fmt.Errorf("LoadStatsResponse.load_reporting_interval: %w", err)
	}
	interval := d.AsDuration()
	if interval <= 0 {
		return reportConfig{}, fmt.Errorf("LoadStatsResponse.load_reporting_interval %v: must be positive", interval)
	}
	return reportConfig{clusters: m.GetClusters(), all: m.GetSendAllClusters(), interval: interval}, nil
}

// totals sums a report's counts, for its ReportSent event.
type totals struct {
	clusters                            int
	issued, succeeded, errored, dropped uint64
}

// buildRequest turns snapshots into a LoadStatsRequest, clusters,
// localities, drop categories and metrics in a stable order.
func buildRequest(snaps []clusterSnapshot) (*lrsv3.LoadStatsRequest, totals) {
	var t totals
	slices.SortFunc(snaps, func(a, b clusterSnapshot) int {
		return cmp.Or(cmp.Compare(a.cluster, b.cluster), cmp.Compare(a.service, b.service))
	})
	stats := make([]*endpointv3.ClusterStats, 0, len(snaps))
	for i := range snaps {
		s := &snaps[i]
		cs := &endpointv3.ClusterStats{
			ClusterName:          s.cluster,
			ClusterServiceName:   s.service,
			TotalDroppedRequests: s.totalDrops,
			LoadReportInterval:   durationpb.New(s.interval),
		}
		t.dropped += s.totalDrops
		for _, cat := range sortedKeys(s.drops) {
			cs.DroppedRequests = append(cs.DroppedRequests, &endpointv3.ClusterStats_DroppedRequests{Category: cat, DroppedCount: s.drops[cat]})
		}
		slices.SortFunc(s.localities, func(a, b localitySnapshot) int {
			x, y := a.locality, b.locality
			return cmp.Or(cmp.Compare(x.Region, y.Region), cmp.Compare(x.Zone, y.Zone), cmp.Compare(x.SubZone, y.SubZone))
		})
		for _, ls := range s.localities {
			us := &endpointv3.UpstreamLocalityStats{
				Locality:                &corev3.Locality{Region: ls.locality.Region, Zone: ls.locality.Zone, SubZone: ls.locality.SubZone},
				TotalSuccessfulRequests: ls.succeeded,
				TotalErrorRequests:      ls.errored,
				TotalIssuedRequests:     ls.issued,
				TotalRequestsInProgress: uint64(max(ls.inProgress, 0)),
			}
			t.issued += ls.issued
			t.succeeded += ls.succeeded
			t.errored += ls.errored
			for _, name := range sortedKeys(ls.metrics) {
				m := ls.metrics[name]
				us.LoadMetricStats = append(us.LoadMetricStats, &endpointv3.EndpointLoadMetricStats{
					MetricName: name, NumRequestsFinishedWithMetric: m.count, TotalMetricValue: m.sum,
				})
			}
			cs.UpstreamLocalityStats = append(cs.UpstreamLocalityStats, us)
		}
		stats = append(stats, cs)
	}
	t.clusters = len(stats)
	return &lrsv3.LoadStatsRequest{ClusterStats: stats}, t
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
