package xdswatch

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/xdslens/xdslens/xdsclient/xdsconfig"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
	"github.com/xdslens/xdslens/xdsgrpc"
)

// Values of the "event" key of the lines of xds:/// channels.
const (
	// eventConfig is a config the channel uses.
	eventConfig = "config"
	// eventConfigError is an error that fails the channel's whole config.
	eventConfigError = "config_error"
	// eventRPC is one RPC made through the channel.
	eventRPC = "rpc"
	// eventEjection is an endpoint ejected by outlier detection, or
	// returned.
	eventEjection = "ejection"
)

// ejectionEvent is the JSON line of an ejection or a return.
type ejectionEvent struct {
	TS        string `json:"ts"`
	Event     string `json:"event"`
	Target    string `json:"target"`
	Cluster   string `json:"cluster"`
	Endpoint  string `json:"endpoint"`
	Ejected   bool   `json:"ejected"`
	Algorithm string `json:"algorithm,omitempty"`
}

// ejectionLine is the JSON line of i, on the channel of target; cluster
// is the leaf cluster whose endpoint it is.
func ejectionLine(ts time.Time, target string, i xdsgrpc.EjectionInfo) ejectionEvent {
	return ejectionEvent{TS: ts.UTC().Format(time.RFC3339Nano), Event: eventEjection, Target: target,
		Cluster: i.Leaf, Endpoint: i.Address, Ejected: i.Ejected, Algorithm: i.Algorithm}
}

// ejectionText is the text line of an ejection, without its time:
//
//	xds:///L ejection: cluster c1 endpoint 127.0.0.1:4001 ejected by failure_percentage (40 of 40 RPCs failed, threshold 50%), 1 of 3 endpoints ejected
//	xds:///L ejection: cluster c1 endpoint 127.0.0.1:4001 returned, 0 of 3 endpoints ejected
func ejectionText(e ejectionEvent, i xdsgrpc.EjectionInfo) string {
	if !e.Ejected {
		return fmt.Sprintf("%s ejection: cluster %s endpoint %s returned, %d of %d endpoints ejected", e.Target, e.Cluster, e.Endpoint, i.EjectedEndpoints, i.Endpoints)
	}
	why := fmt.Sprintf("%d of %d RPCs failed, threshold %g%%", i.Failures, i.Successes+i.Failures, i.Threshold)
	if e.Algorithm == "success_rate" {
		why = fmt.Sprintf("success rate %.3f of %d RPCs, under the threshold %.3f", float64(i.Successes)/float64(max(i.Successes+i.Failures, 1)), i.Successes+i.Failures, i.Threshold)
	}
	return fmt.Sprintf("%s ejection: cluster %s endpoint %s ejected by %s (%s), %d of %d endpoints ejected", e.Target, e.Cluster, e.Endpoint, e.Algorithm, why, i.EjectedEndpoints, i.Endpoints)
}

// configEvent is the JSON line of a config.
type configEvent struct {
	TS          string                 `json:"ts"`
	Event       string                 `json:"event"`
	Target      string                 `json:"target"`
	Listener    string                 `json:"listener"`
	RouteConfig string                 `json:"route_config"`
	VirtualHost string                 `json:"virtual_host"`
	Clusters    map[string]clusterJSON `json:"clusters"`
}

// clusterJSON is one cluster slot of a config line: a leaf (type eds or
// logical_dns, priorities, resolution_note), an aggregate (type
// aggregate, leaves), or a failed slot (error alone).
type clusterJSON struct {
	Type string `json:"type,omitempty"`
	// LBPolicy is the gRPC name of the leaf's endpoint policy, as
	// xdsgrpc.LBPolicyName gives it ("" when it cannot be used: its RPCs
	// fail, saying why).
	LBPolicy string `json:"lb_policy,omitempty"`
	// OutlierDetection says that the leaf has outlier detection.
	OutlierDetection bool `json:"outlier_detection,omitempty"`
	// Priorities holds, per priority, the sorted addresses of the
	// endpoints the channel may use; never nil for a leaf.
	Priorities     *[][]string `json:"priorities,omitempty"`
	ResolutionNote *string     `json:"resolution_note,omitempty"`
	Leaves         []string    `json:"leaves,omitempty"`
	Error          *statusJSON `json:"error,omitempty"`
}

// statusJSON is the error of a failed cluster slot.
type statusJSON struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// configErrorEvent is the JSON line of a failed config.
type configErrorEvent struct {
	TS      string `json:"ts"`
	Event   string `json:"event"`
	Target  string `json:"target"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

// rpcEvent is the JSON line of one RPC.
type rpcEvent struct {
	TS      string `json:"ts"`
	Event   string `json:"event"`
	Target  string `json:"target"`
	Method  string `json:"method"`
	Code    string `json:"code"`
	Message string `json:"message"`
	Peer    string `json:"peer"`
	Cluster string `json:"cluster"`
	// Attempts counts the RPC's attempts, 1 without retries.
	Attempts int `json:"attempts"`
	// Fault is the fault the fault injection filter put on the RPC,
	// "delay", "abort" or "delay+abort"; absent when none.
	Fault string `json:"fault,omitempty"`
}

// kindNames are the cluster types as config lines name them.
var kindNames = map[xdsresource.ClusterKind]string{
	xdsresource.ClusterEDS:        "eds",
	xdsresource.ClusterLogicalDNS: "logical_dns",
	xdsresource.ClusterAggregate:  "aggregate",
}

// configLine is the JSON line of c, the config of the channel of target.
func configLine(ts time.Time, target string, c *xdsconfig.Config) configEvent {
	e := configEvent{
		TS: ts.UTC().Format(time.RFC3339Nano), Event: eventConfig, Target: target,
		Listener: c.ListenerName, RouteConfig: c.RouteConfigName,
		Clusters: make(map[string]clusterJSON, len(c.Clusters)),
	}
	if c.VirtualHost != nil {
		e.VirtualHost = c.VirtualHost.Name
	}
	for name, slot := range c.Clusters {
		e.Clusters[name] = clusterLine(slot)
	}
	return e
}

// clusterLine describes one cluster slot.
func clusterLine(slot *xdsconfig.ClusterConfig) clusterJSON {
	if slot.Err != nil {
		code, msg := slotError(slot.Err)
		return clusterJSON{Error: &statusJSON{Code: codeName(code), Message: msg}}
	}
	if slot.Cluster == nil {
		return clusterJSON{}
	}
	c := clusterJSON{Type: kindNames[slot.Cluster.Kind]}
	if slot.Cluster.Kind == xdsresource.ClusterAggregate {
		c.Leaves = slot.Leaves
		return c
	}
	c.LBPolicy, _ = xdsgrpc.LBPolicyName(slot.Cluster)
	c.OutlierDetection = slot.Cluster.OutlierDetection != nil
	p := priorities(slot.Endpoints)
	c.Priorities = &p
	note := slot.ResolutionNote
	c.ResolutionNote = &note
	return c
}

// slotError returns the code the dependency manager got for a failed
// slot (a Cluster that does not exist is NOT_FOUND: the line is for people,
// while RPCs to it fail UNAVAILABLE) and the message RPCs fail with.
func slotError(err error) (codes.Code, string) {
	var re *xdsconfig.ResourceError
	if errors.As(err, &re) {
		return re.CauseCode(), re.Error()
	}
	st := status.Convert(err)
	return st.Code(), st.Message()
}

// priorities lists, per priority, the sorted addresses of the endpoints
// of cla that the channel may use (health UNKNOWN or HEALTHY): [] when
// there are none, or when the endpoints could not be had (cla is nil; the
// resolution note says why).
func priorities(cla *xdsresource.ClusterLoadAssignment) [][]string {
	out := [][]string{}
	if cla == nil {
		return out
	}
	for _, l := range cla.Localities {
		for int(l.Priority) >= len(out) {
			out = append(out, []string{})
		}
		for _, ep := range l.Endpoints {
			if ep.Health.Usable() {
				out[l.Priority] = append(out[l.Priority], ep.Addresses...)
			}
		}
	}
	for _, p := range out {
		slices.Sort(p)
	}
	return out
}

// configText is the text line of a config, without its time:
//
//	xds:///L config: listener L, route config R, virtual host VH; cluster c1: eds round_robin [a b] [c], note: ...; cluster agg: aggregate of c1, c2; cluster bad: ERROR NOT_FOUND: ...
func configText(e configEvent) string {
	rc := e.RouteConfig
	if rc == "" {
		rc = "(inline)"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s config: listener %s, route config %s, virtual host %s", e.Target, e.Listener, rc, e.VirtualHost)
	names := make([]string, 0, len(e.Clusters))
	for name := range e.Clusters {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		c := e.Clusters[name]
		fmt.Fprintf(&b, "; cluster %s: ", name)
		switch {
		case c.Error != nil:
			fmt.Fprintf(&b, "ERROR %s: %s", c.Error.Code, c.Error.Message)
		case c.Priorities == nil:
			fmt.Fprintf(&b, "%s of %s", c.Type, strings.Join(c.Leaves, ", "))
		default:
			b.WriteString(c.Type)
			if c.LBPolicy != "" {
				b.WriteString(" " + c.LBPolicy)
			}
			if c.OutlierDetection {
				b.WriteString(" with outlier_detection")
			}
			if len(*c.Priorities) == 0 {
				b.WriteString(", no endpoints")
			}
			for _, p := range *c.Priorities {
				b.WriteString(" [" + strings.Join(p, " ") + "]")
			}
			if c.ResolutionNote != nil {
				b.WriteString(", note: " + *c.ResolutionNote)
			}
		}
	}
	return b.String()
}

// configErrorLine is the JSON line of err, the error that failed the
// whole config of the channel of target, whose Listener is listener. Its
// code is the one the dependency manager got (RPCs fail UNAVAILABLE); its
// message is the one RPCs fail with, naming the listener when that does
// not already.
func configErrorLine(ts time.Time, target, listener string, err error) configErrorEvent {
	code, msg := slotError(err)
	if !strings.Contains(msg, strconv.Quote(listener)) {
		msg = fmt.Sprintf("listener %q: %s", listener, msg)
	}
	return configErrorEvent{TS: ts.UTC().Format(time.RFC3339Nano), Event: eventConfigError, Target: target, Code: codeName(code), Message: msg}
}

// configErrorText is the text line of a failed config, without its time.
func configErrorText(e configErrorEvent) string {
	return fmt.Sprintf("%s config ERROR %s: %s", e.Target, e.Code, e.Message)
}

// rpcText is the text line of an RPC, without its time:
//
//	xds:///L rpc /grpc.health.v1.Health/Check: OK, cluster c1, peer 127.0.0.1:4001
//	xds:///L rpc /grpc.health.v1.Health/Check: UNAVAILABLE, no cluster, no peer: <message>
func rpcText(e rpcEvent) string {
	cluster, peer := "no cluster", "no peer"
	if e.Cluster != "" {
		cluster = "cluster " + e.Cluster
	}
	if e.Peer != "" {
		peer = "peer " + e.Peer
	}
	s := fmt.Sprintf("%s rpc %s: %s, %s, %s", e.Target, e.Method, e.Code, cluster, peer)
	if e.Attempts > 1 {
		s += fmt.Sprintf(", %d attempts", e.Attempts)
	}
	if e.Fault != "" {
		s += ", fault " + e.Fault
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}
