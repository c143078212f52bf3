package dashboards_test

// The resilience channels of the data-plane end-to-end test
// (TestDataPlaneOnPrometheus): outlier detection ejecting a backend that
// fails every RPC, retries of its failures, and faults the listener's
// fault filter injects.

import (
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"github.com/xdslens/xdslens/dashboards"
	"github.com/xdslens/xdslens/internal/testing/promtest"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/controlplane"
)

// The listeners of the resilience channels, and what their RPCs become.
var resilienceListeners = []string{
	"outlier", // cluster outlier: three backends, one failing every RPC, which outlier detection ejects again and again
	"retry",   // cluster retry: the failing backend's RPCs retried on the other (retry_on unavailable)
	"fault",   // cluster fault: the fault filter delays every RPC and aborts half of them (RESOURCE_EXHAUSTED)
}

// Outlier detection of cluster outlier: with an RPC every 100ms through
// its channel, each of the three backends has ten RPCs in an interval
// (failure_percentage asks for five); an ejection lasts one base
// ejection time (WithOutlierDetection's max), so the failing backend is
// ejected again every two intervals or so, and ejections keep showing.
const (
	outlierInterval = 3 * time.Second
	outlierEjection = 3 * time.Second
)

// resilienceResources returns the configuration of the resilience
// channels: okAddr and plainAddr answer, sickAddr fails every RPC.
func resilienceResources(okAddr, plainAddr, sickAddr string) []proto.Message {
	retryRoute := controlplane.RouteConfig("retry-route", []string{"*"}, "retry")
	controlplane.WithRetry(retryRoute.GetVirtualHosts()[0].GetRoutes()[0].GetRoute(), "unavailable", 2, 10*time.Millisecond, 50*time.Millisecond)
	fault := controlplane.FaultDelay(time.Millisecond, 100)
	fault.Abort = controlplane.FaultAbort(uint32(codes.ResourceExhausted), 50).GetAbort()
	return []proto.Message{
		controlplane.Listener("outlier", "outlier-route"), controlplane.RouteConfig("outlier-route", []string{"*"}, "outlier"),
		controlplane.WithOutlierDetection(controlplane.Cluster("outlier", ""), outlierInterval, outlierEjection),
		controlplane.Endpoints("outlier", okAddr, plainAddr, sickAddr),
		controlplane.Listener("retry", "retry-route"), retryRoute,
		controlplane.Cluster("retry", ""), controlplane.Endpoints("retry", okAddr, sickAddr),
		controlplane.ListenerWithFault("fault", "fault-route", fault, 0), controlplane.RouteConfig("fault-route", []string{"*"}, "fault"),
		controlplane.Cluster("fault", ""), controlplane.Endpoints("fault", okAddr),
	}
}

// expectResiliencePanels checks that the Resilience row shows what the
// resilience channels did, for the xdswatch process of fleet.
func expectResiliencePanels(t *testing.T, prom *promtest.Server, fleet map[string]string) {
	t.Helper()
	prom.ExpectLabels(t, "ejections", panelExpr(t, "Ejections by cluster and algorithm", fleet), dashboards.LabelAlgorithm, "failure_percentage")
	prom.ExpectLabels(t, "ejections", panelExpr(t, "Ejections by cluster and algorithm", fleet), dashboards.LabelBackendService, "outlier")
	// One of the three endpoints of cluster outlier ejected: a third.
	prom.ExpectLabels(t, "ejected share", panelExpr(t, "Ejected endpoints by cluster", fleet)+" > 0.33 < 0.34", dashboards.LabelBackendService, "outlier")
	prom.ExpectLabels(t, "retries", panelExpr(t, "Retries by cluster and code", fleet), dashboards.LabelStatus, "UNAVAILABLE")
	prom.ExpectLabels(t, "retries", panelExpr(t, "Retries by cluster and code", fleet), dashboards.LabelBackendService, "retry")
	prom.ExpectLabels(t, "retries per call", panelExpr(t, "Retries as a share of calls", fleet)+" > 0", dashboards.LabelBackendService, "retry")
	// Clusters with calls and no retry read 0.
	prom.ExpectLabels(t, "no retries per call", panelExpr(t, "Retries as a share of calls", fleet)+" == 0", dashboards.LabelBackendService, "ok", "fault")
	prom.ExpectLabels(t, "faults", panelExpr(t, "Injected faults by cluster and kind", fleet), dashboards.LabelFault, "delay", "abort")
}
