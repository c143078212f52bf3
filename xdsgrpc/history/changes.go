package history

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/xdslens/xdslens/xdsclient/xdsresource/routeconfig"

	"github.com/xdslens/xdslens/xdsclient/xdsresource/filterconfig"

	"github.com/cespare/xxhash/v2"

	"github.com/xdslens/xdslens/xdsclient/xdsconfig"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
	"github.com/xdslens/xdslens/xdsgrpc/internal/routing"
)

// Values of Change.Op.
const (
	OpAdded   = "added"
	OpRemoved = "removed"
	OpChanged = "changed"
)

// changeList collects changes, at most MaxChanges, counting the others.
type changeList struct {
	list    []Change
	omitted int
}

func (l *changeList) add(kind, name, op, before, after string) {
	if len(l.list) == MaxChanges {
		l.omitted++
		return
	}
	l.list = append(l.list, Change{Kind: kind, Name: text(name), Op: op, Before: text(before), After: text(after)})
}

// diff adds the change of one thing described before and after ("" when
// absent), if there is one.
func (l *changeList) diff(kind, name, before, after string) {
	switch {
	case before == after:
	case before == "":
		l.add(kind, name, OpAdded, "", after)
	case after == "":
		l.add(kind, name, OpRemoved, before, "")
	default:
		l.add(kind, name, OpChanged, before, after)
	}
}

// Changes returns what differs from config from to config to in the parts
// that route RPCs (from nil: everything is added), at most MaxChanges of
// them, and how many more there are: the Listener's route configuration
// source, HTTP filters and max_stream_duration; the route configuration's
// name; the virtual host chosen (its name, domains, retry policy); each
// route (its matchers, action, timeout, retries, hash policies), routes
// moved by an insertion or removal being aligned; each cluster slot (its
// type, policy, endpoints by priority, error, resolution note).
func Changes(from, to *xdsconfig.Config) ([]Change, int) {
	return changes(from, to, xdsconfig.Diff(from, to))
}

// changes is Changes, with ch the Diff of from and to.
func changes(from, to *xdsconfig.Config, ch xdsconfig.Changes) ([]Change, int) {
	if from == nil {
		from = &xdsconfig.Config{}
	}
	var l changeList
	if from.Listener != to.Listener || from.ListenerName != to.ListenerName {
		l.diff("listener", to.ListenerName, describeListener(from.Listener), describeListener(to.Listener))
	}
	if from.RouteConfigName != to.RouteConfigName || (from.RouteConfig == nil) != (to.RouteConfig == nil) {
		l.diff("route_config", to.RouteConfigName, describeRouteConfig(from), describeRouteConfig(to))
	}
	if from.VirtualHost != to.VirtualHost {
		vh := ""
		if to.VirtualHost != nil {
			vh = to.VirtualHost.Name
		}
		before, after := describeVirtualHost(from.VirtualHost), describeVirtualHost(to.VirtualHost)
		if before == after && from.VirtualHost != nil && overridesKey(from.VirtualHost.FilterOverrides) != overridesKey(to.VirtualHost.FilterOverrides) {
			after += " (their configs changed)"
		}
		l.diff("virtual_host", vh, before, after)
		diffRoutes(&l, routesOf(from.VirtualHost), routesOf(to.VirtualHost))
	}
	for _, name := range ch.Added {
		l.add("cluster", name, OpAdded, "", describeSlot(to.Clusters[name]))
	}
	for _, name := range ch.Removed {
		l.add("cluster", name, OpRemoved, describeSlot(from.Clusters[name]), "")
	}
	for _, name := range ch.Changed {
		before, after := describeSlot(from.Clusters[name]), describeSlot(to.Clusters[name])
		if before != after {
			l.add("cluster", name, OpChanged, before, after)
		}
	}
	return l.list, l.omitted
}

func routesOf(vh *routeconfig.VirtualHost) []routeconfig.Route {
	if vh == nil {
		return nil
	}
	return vh.Routes
}

// describeListener describes the routing parts of l, "" for none.
func describeListener(l *xdsresource.Listener) string {
	if l == nil {
		return ""
	}
	var b strings.Builder
	if l.InlineRouteConfig != nil {
		b.WriteString("inline route configuration")
	} else {
		b.WriteString("RDS " + strconv.Quote(l.RouteConfigName))
	}
	names := make([]string, len(l.HTTPFilters))
	for i, f := range l.HTTPFilters {
		names[i] = f.Name
	}
	fmt.Fprintf(&b, ", HTTP filters [%s]", strings.Join(names, " "))
	if l.MaxStreamDuration > 0 {
		fmt.Fprintf(&b, ", max_stream_duration %v", l.MaxStreamDuration)
	}
	return b.String()
}

// describeRouteConfig describes where c's route configuration comes from,
// "" for none.
func describeRouteConfig(c *xdsconfig.Config) string {
	switch {
	case c.RouteConfig == nil:
		return ""
	case c.RouteConfigName == "":
		return "inline in the Listener"
	}
	return "RDS " + strconv.Quote(c.RouteConfigName)
}

// describeVirtualHost describes vh but its routes, "" for none.
func describeVirtualHost(vh *routeconfig.VirtualHost) string {
	if vh == nil {
		return ""
	}
	s := fmt.Sprintf("%q, domains %q", vh.Name, vh.Domains)
	if vh.RetryPolicy != nil {
		s += ", " + routing.DescribeRetry(vh.RetryPolicy)
	}
	if len(vh.FilterOverrides) > 0 {
		s += ", HTTP filter overrides " + routing.DescribeOverrides(vh.FilterOverrides)
	}
	return s
}

// describeSlot describes a cluster slot: `eds "c1-eds" round_robin,
// endpoints [a b] | [c]`, `aggregate of [c1 c2]`, `error UNAVAILABLE: ...`;
// with its resolution note when it is more than the node ID.
func describeSlot(s *xdsconfig.ClusterConfig) string {
	if s == nil {
		return ""
	}
	if s.Err != nil {
		return "error " + errorOf(s.Err).Code + ": " + s.Err.Error()
	}
	c := s.Cluster
	if c == nil {
		return "no cluster"
	}
	var b strings.Builder
	switch c.Kind {
	case xdsresource.ClusterAggregate:
		fmt.Fprintf(&b, "aggregate of %v", s.Leaves)
		return b.String()
	case xdsresource.ClusterEDS:
		fmt.Fprintf(&b, "eds %q %s", c.EDSName(), c.LBPolicy)
	case xdsresource.ClusterLogicalDNS:
		fmt.Fprintf(&b, "logical_dns %q %s", c.DNSHostname, c.LBPolicy)
	}
	if c.OutlierDetection != nil {
		b.WriteString(", outlier_detection")
	}
	b.WriteString(", endpoints ")
	b.WriteString(describeEndpoints(s.Endpoints))
	if note := s.ResolutionNote; note != "" && !strings.HasPrefix(note, "xDS node ID:") {
		b.WriteString(", note: " + note)
	}
	return b.String()
}

// describeEndpoints lists the usable addresses of cla by priority, sorted,
// "none" when it has none; it stops once the description is longer than
// MaxText.
func describeEndpoints(cla *xdsresource.ClusterLoadAssignment) string {
	if cla == nil {
		return "none"
	}
	var prios [][]string
	n := 0
	for _, l := range cla.Localities {
		for int(l.Priority) >= len(prios) {
			prios = append(prios, nil)
		}
		for _, ep := range l.Endpoints {
			if !ep.Health.Usable() || n > MaxText {
				continue
			}
			for _, a := range ep.Addresses {
				prios[l.Priority] = append(prios[l.Priority], a)
				n += len(a) + 1
			}
		}
	}
	if len(prios) == 0 {
		return "none"
	}
	parts := make([]string, len(prios))
	for i, p := range prios {
		slices.Sort(p)
		parts[i] = "[" + strings.Join(p, " ") + "]"
	}
	return strings.Join(parts, " | ")
}

// maxAlignedRoutes bounds the routes two virtual hosts may have for their
// changes to be aligned (a longest common subsequence, in time and memory
// proportional to the product of their counts); beyond, routes are
// compared by index.
const maxAlignedRoutes = 512

// routeText is a route in words, and a key that differs when anything
// of it that routes differs.
type routeText struct{ text, key string }

func routeTexts(routes []routeconfig.Route) []routeText {
	out := make([]routeText, len(routes))
	for i := range routes {
		r := &routes[i]
		out[i].text = routing.DescribeRoute(r)
		out[i].key = out[i].text + "\x00" + overridesKey(r.FilterOverrides)
		for _, wc := range r.Action.WeightedClusters {
			out[i].key += "\x00" + overridesKey(wc.FilterOverrides)
		}
		if r.AutoHostRewrite {
			out[i].key += "\x00auto_host_rewrite"
		}
	}
	return out
}

// overridesKey identifies the content of filter overrides.
func overridesKey(fo filterconfig.Overrides) string {
	if len(fo) == 0 {
		return ""
	}
	names := make([]string, 0, len(fo))
	for name := range fo {
		names = append(names, name)
	}
	slices.Sort(names)
	var b strings.Builder
	for _, name := range names {
		o := fo[name]
		fmt.Fprintf(&b, "%q %q %x;", name, o.TypeURL, xxhash.Sum64(o.Config.GetValue()))
	}
	return b.String()
}

// diffRoutes adds the changes of the routes from a to b: the routes of a
// longest common subsequence stay, and between two of them the routes of
// a and b are paired as changed, the rest added or removed.
func diffRoutes(l *changeList, ra, rb []routeconfig.Route) {
	a, b := routeTexts(ra), routeTexts(rb)
	i, j := 0, 0
	gap := func(iEnd, jEnd int) {
		for ; i < iEnd && j < jEnd; i, j = i+1, j+1 {
			if a[i].key != b[j].key {
				after := b[j].text
				if after == a[i].text {
					after += " (HTTP filter override configs changed)"
				}
				l.add("route", label(&rb[j]), OpChanged, a[i].text, after)
			}
		}
		for ; i < iEnd; i++ {
			l.add("route", label(&ra[i]), OpRemoved, a[i].text, "")
		}
		for ; j < jEnd; j++ {
			l.add("route", label(&rb[j]), OpAdded, "", b[j].text)
		}
	}
	if len(a) > maxAlignedRoutes || len(b) > maxAlignedRoutes {
		gap(len(a), len(b))
		return
	}
	// lcs[i][j] is the length of a longest common subsequence of a[i:]
	// and b[j:].
	lcs := make([][]int32, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int32, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i].key == b[j].key {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	for i < len(a) && j < len(b) {
		if a[i].key == b[j].key {
			i, j = i+1, j+1
			continue
		}
		// Walk the subsequence to the next pair it keeps: what lies
		// between is the gap.
		gi, gj := i, j
		for gi < len(a) && gj < len(b) && a[gi].key != b[gj].key {
			if lcs[gi+1][gj] >= lcs[gi][gj+1] {
				gi++
			} else {
				gj++
			}
		}
		if gi == len(a) || gj == len(b) {
			break // no pair left: the rest is one gap
		}
		gap(gi, gj)
	}
	gap(len(a), len(b))
}

// label names route r: its name, or "#INDEX", its position in the
// virtual host's routes as received.
func label(r *routeconfig.Route) string {
	if r.Name != "" {
		return r.Name
	}
	return "#" + strconv.Itoa(r.Index)
}
