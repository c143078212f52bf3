package xdsconfig

import (
	"fmt"
	"slices"
	"strings"

	"github.com/xdslens/xdslens/xdsclient/xdsresource/routeconfig"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/xdslens/xdslens/xdsclient"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
)

// xdsWatcher passes the callbacks of one watch of the xDS client to the
// manager's handlers, which run with mu held, unless the watch is no
// longer wanted (*dead).
type xdsWatcher struct {
	m       *Manager
	dead    *bool
	changed func(*xdsclient.Resource, error)
	ambient func(error)
}

func (w xdsWatcher) ResourceChanged(r *xdsclient.Resource, err error) {
	w.m.handle(w.dead, func() { w.changed(r, err) })
}

func (w xdsWatcher) AmbientError(err error) {
	w.m.handle(w.dead, func() { w.ambient(err) })
}

// valueOf returns r's value as a T, or an error if the resource is not one.
func valueOf[T any](r *xdsclient.Resource) (T, error) {
	var v T
	if r == nil {
		return v, status.Errorf(codes.Internal, "no resource delivered")
	}
	v, ok := r.Value.(T)
	if !ok {
		return v, status.Errorf(codes.Internal, "%s %q: decoded value is a %T, want a %T", r.Type.TypeURL(), r.Name, r.Value, v)
	}
	return v, nil
}

// fail reports that the whole config failed.
func (m *Manager) fail(kind, name string, cause error, detail string) {
	m.lastFailed = true
	m.enqueue(output{err: m.msg.resourceError(kind, name, cause, detail)})
}

// ambientPart is the resolution note part of an ambient error, "" when
// err is nil (the error is over).
func (m *Manager) ambientPart(kind, name string, err error) string {
	if err == nil {
		return ""
	}
	return m.msg.part(kind, name, causeOf(err))
}

// watchListener starts the watch of the listener.
func (m *Manager) watchListener() {
	st := &watchState{name: m.listener}
	m.lds = st
	st.cancel = m.client.Watch(xdsresource.ListenerType, m.listener, xdsWatcher{m, &st.dead,
		func(r *xdsclient.Resource, err error) { m.onListener(r, err) },
		func(err error) { m.ldsNote = m.ambientPart("LDS", m.listener, err) }})
}

func (m *Manager) onListener(r *xdsclient.Resource, err error) {
	m.lds.heard = true
	var l *xdsresource.Listener
	if err == nil {
		l, err = valueOf[*xdsresource.Listener](r)
	}
	switch {
	case err != nil:
		m.lis = nil
		m.fail("LDS", m.listener, err, "")
		return
	case l.Server != nil:
		m.lis = nil
		m.fail("LDS", m.listener, nil, "not an API listener")
		return
	}
	m.lis, m.lisVersion, m.ldsNote = l, r.Version, ""
	if l.InlineRouteConfig != nil {
		m.dropRDS()
		m.setRouteConfig(l.InlineRouteConfig, r.Version)
		return
	}
	if m.rds == nil || m.rds.name != l.RouteConfigName {
		// Until the new route configuration comes, no config can be made:
		// the listener names it. The clusters of the config in use stay
		// watched (see reconcile).
		m.dropRDS()
		m.rc, m.vh, m.roots = nil, nil, nil
		m.watchRouteConfig(l.RouteConfigName)
	}
}

// watchRouteConfig starts the watch of a route configuration.
func (m *Manager) watchRouteConfig(name string) {
	st := &watchState{name: name}
	m.rds = st
	st.cancel = m.client.Watch(xdsresource.RouteConfigType, name, xdsWatcher{m, &st.dead,
		func(r *xdsclient.Resource, err error) { m.onRouteConfig(st, r, err) },
		func(err error) { m.rdsNote = m.ambientPart("RDS", name, err) }})
}

// dropRDS cancels the watch of the route configuration, if any.
func (m *Manager) dropRDS() {
	if m.rds == nil {
		return
	}
	m.rds.dead = true
	m.cancels = append(m.cancels, m.rds.cancel)
	m.rds, m.rdsNote = nil, ""
}

func (m *Manager) onRouteConfig(st *watchState, r *xdsclient.Resource, err error) {
	st.heard = true
	var rc *routeconfig.Config
	if err == nil {
		rc, err = valueOf[*routeconfig.Config](r)
	}
	if err != nil {
		m.rc, m.vh, m.roots = nil, nil, nil
		m.fail("RDS", st.name, err, "")
		return
	}
	m.setRouteConfig(rc, r.Version)
}

// setRouteConfig uses rc, from RDS or inline in the listener, if it has a
// virtual host for the authority; version is that of the resource that
// carried it.
func (m *Manager) setRouteConfig(rc *routeconfig.Config, version string) {
	i := FindVirtualHost(rc.VirtualHosts, m.authority)
	if i < 0 {
		m.rc, m.vh, m.roots = nil, nil, nil
		kind, name := "LDS", m.listener
		if m.rds != nil {
			kind, name = "RDS", m.rds.name
		}
		m.fail(kind, name, nil, fmt.Sprintf("could not find VirtualHost for %q in RouteConfiguration", m.authority))
		return
	}
	m.rc, m.rcVersion, m.vh, m.rdsNote = rc, version, &rc.VirtualHosts[i], ""
	m.roots = clustersOf(m.vh, m.roots[:0])
}

// clustersOf appends to dst the clusters that the routes of vh name, each
// once, in the order they appear: a route's cluster and the clusters of its
// weighted_clusters. A cluster_header or cluster_specifier_plugin route
// names its clusters at the time of the RPC, none here.
func clustersOf(vh *routeconfig.VirtualHost, dst []string) []string {
	seen := make(map[string]bool, len(vh.Routes))
	add := func(name string) {
		if !seen[name] {
			seen[name] = true
			dst = append(dst, name)
		}
	}
	for i := range vh.Routes {
		a := &vh.Routes[i].Action
		switch a.Kind {
		case routeconfig.ActionCluster:
			add(a.Cluster)
		case routeconfig.ActionWeightedClusters:
			for _, wc := range a.WeightedClusters {
				add(wc.Name)
			}
		}
	}
	return dst
}

// watchCluster starts the watch of a cluster.
func (m *Manager) watchCluster(name string) *clusterState {
	st := &clusterState{watchState: watchState{name: name}}
	m.clusters[name] = st
	st.cancel = m.client.Watch(xdsresource.ClusterType, name, xdsWatcher{m, &st.dead,
		func(r *xdsclient.Resource, err error) { m.onCluster(st, r, err) },
		func(err error) {
			st.note = m.ambientPart("CDS", name, err)
			if st.heard {
				m.dirtyCDS = append(m.dirtyCDS, st)
				m.dataEvent = true
			}
		}})
	return st
}

func (m *Manager) onCluster(st *clusterState, r *xdsclient.Resource, err error) {
	st.heard, st.note = true, ""
	var c *xdsresource.Cluster
	if err == nil {
		c, err = valueOf[*xdsresource.Cluster](r)
	}
	switch {
	case err != nil:
		st.cluster, st.server, st.err = nil, "", m.msg.resourceError("CDS", st.name, err, "")
	case c.Kind != xdsresource.ClusterEDS && c.Kind != xdsresource.ClusterLogicalDNS && c.Kind != xdsresource.ClusterAggregate:
		st.cluster, st.server, st.err = nil, "", m.msg.resourceError("CDS", st.name, nil, "unsupported cluster type "+c.Kind.String())
	default:
		st.cluster, st.server, st.version, st.err = c, r.Server, r.Version, nil
		st.kind, st.endpoints = c.Kind, c.EDSName()
		if c.Kind == xdsresource.ClusterLogicalDNS {
			st.endpoints = c.DNSHostname
		}
	}
}

// watchEndpoints starts the watch of an EDS resource.
func (m *Manager) watchEndpoints(name string) *edsState {
	st := &edsState{watchState: watchState{name: name}}
	m.endpoints[name] = st
	st.cancel = m.client.Watch(xdsresource.EndpointsType, name, xdsWatcher{m, &st.dead,
		func(r *xdsclient.Resource, err error) { m.onEndpoints(st, r, err) },
		func(err error) {
			st.note = m.ambientPart("EDS", name, err)
			m.endpointsData(st)
		}})
	return st
}

// endpointsData marks a change of the data of endpoints already heard
// from: the clusters that use them change, the graph does not.
func (m *Manager) endpointsData(st *edsState) {
	if st.heard {
		m.dirtyEDS = append(m.dirtyEDS, st)
		m.dataEvent = true
	}
}

func (m *Manager) onEndpoints(st *edsState, r *xdsclient.Resource, err error) {
	m.endpointsData(st)
	st.heard, st.note = true, ""
	var cla *xdsresource.ClusterLoadAssignment
	if err == nil {
		cla, err = valueOf[*xdsresource.ClusterLoadAssignment](r)
	}
	if err != nil {
		// As gRPC C-core: the cluster stays usable, with no endpoints, and
		// its resolution note says why.
		st.cla, st.version, st.dataNote = nil, "", m.msg.part("EDS", st.name, causeOf(err))
		return
	}
	st.cla, st.version, st.dataNote = cla, r.Version, m.contentNote(st.name, cla)
}

// contentNote is the resolution note that an EDS resource earns by its
// content, as gRPC C-core writes it: one with no localities, or with
// localities that have no endpoints, sends RPCs nowhere, or to fewer
// places than its weights say. As in C-core, the empty localities are
// listed once each (a locality may be empty at several priorities), in
// the order of their names.
func (m *Manager) contentNote(name string, cla *xdsresource.ClusterLoadAssignment) string {
	if len(cla.Localities) == 0 {
		return m.msg.part("EDS", name, "contains no localities")
	}
	var empty []string
	for _, l := range cla.Localities {
		if len(l.Endpoints) == 0 {
			empty = append(empty, fmt.Sprintf("{region=%q, zone=%q, sub_zone=%q}", l.Region, l.Zone, l.SubZone))
		}
	}
	if len(empty) == 0 {
		return ""
	}
	slices.Sort(empty)
	empty = slices.Compact(empty)
	size := 0
	for i, s := range empty {
		if size > maxPartLen {
			empty = append(empty[:i], "...")
			break
		}
		size += len(s)
	}
	return m.msg.part("EDS", name, "contains empty localities: ["+strings.Join(empty, "; ")+"]")
}
