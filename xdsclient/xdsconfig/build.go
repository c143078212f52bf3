package xdsconfig

import (
	"maps"
	"slices"

	"github.com/xdslens/xdslens/xdsclient/xdsresource"
)

// update walks the clusters of the current virtual host, starts the
// watches they need, drops those nothing needs, and makes a new Config if
// every resource has been heard from and something changed. mu is held.
func (m *Manager) update() {
	if m.lis == nil || m.vh == nil {
		// Nothing to walk from: keep every watch (as gRPC C-core does) for
		// when the listener or route configuration comes back.
		m.walkValid = false
		return
	}
	clear(m.wantEDS)
	clear(m.wantDNS)
	m.walk.reset(m.lookupFn)
	ready := true
	for _, name := range m.roots {
		if !m.walk.root(name) {
			ready = false
		}
	}
	m.walkValid = true
	m.reconcile()
	if !ready {
		return
	}
	cfg := m.build()
	if cfg == nil {
		return
	}
	m.last, m.lastFailed = cfg, false
	m.enqueue(output{cfg: cfg, eds: maps.Clone(m.wantEDS), dns: maps.Clone(m.wantDNS)})
}

// lookup is the walk's lookupFunc: it watches what a cluster needs.
func (m *Manager) lookup(name string) (*xdsresource.Cluster, clusterStatus) {
	st := m.clusters[name]
	switch {
	case st == nil:
		m.watchCluster(name)
		return nil, statusPending
	case !st.heard:
		return nil, statusPending
	case st.err != nil:
		return nil, statusFailed
	}
	c := st.cluster
	switch c.Kind {
	case xdsresource.ClusterEDS:
		name := c.EDSName()
		m.wantEDS[name] = true
		e := m.endpoints[name]
		if e == nil {
			e = m.watchEndpoints(name)
		}
		if !e.heard {
			return c, statusPending
		}
	case xdsresource.ClusterLogicalDNS:
		m.wantDNS[c.DNSHostname] = true
		d := m.dns[c.DNSHostname]
		if d == nil {
			d = m.startDNS(c.DNSHostname)
		}
		if !d.heard {
			return c, statusPending
		}
	}
	return c, statusReady
}

// reconcile cancels the watches that neither the current resources nor
// the config in use (delivered) nor the one about to be (pending) need. A
// cluster that a new route configuration no longer names thus stays
// watched until a config without it is delivered (gRFC A74). mu is held.
func (m *Manager) reconcile() {
	for name, st := range m.clusters {
		if m.walk.nodes[name] != nil || m.delivered.holds(name) || m.pending.holds(name) {
			continue
		}
		st.dead = true
		m.cancels = append(m.cancels, st.cancel)
		delete(m.clusters, name)
	}
	for name, st := range m.endpoints {
		if m.wantEDS[name] || m.delivered.eds[name] || m.pending.eds[name] {
			continue
		}
		st.dead = true
		m.cancels = append(m.cancels, st.cancel)
		delete(m.endpoints, name)
	}
	for name, st := range m.dns {
		if m.wantDNS[name] || m.delivered.dns[name] || m.pending.dns[name] {
			continue
		}
		st.dead = true
		st.cancel()
		delete(m.dns, name)
	}
}

// build makes the Config of the current resources from a complete walk, or
// returns nil when it would equal the last one made (and no error came
// since). Slots that did not change are the last config's, so that Diff
// and the receiver can tell them by identity.
func (m *Manager) build() *Config {
	var prev map[string]*ClusterConfig
	if m.last != nil {
		prev = m.last.Clusters
	}
	top := m.msg.join(m.ldsNote, m.rdsNote)
	m.slots = m.slots[:0]
	reused := 0
	for _, n := range m.walk.order {
		if n.status == statusPending {
			continue // below an aggregate that failed
		}
		s := m.slotOf(n, top)
		if p := prev[n.name]; p != nil && sameSlot(p, &s) {
			m.slots = append(m.slots, p)
			reused++
			continue
		}
		c := s // only a new slot escapes
		m.slots = append(m.slots, &c)
	}
	rdsName := ""
	if m.rds != nil {
		rdsName = m.rds.name
	}
	if l := m.last; l != nil && !m.lastFailed && reused == len(l.Clusters) && reused == len(m.slots) &&
		l.Listener == m.lis && l.RouteConfig == m.rc && l.VirtualHost == m.vh && l.RouteConfigName == rdsName {
		return nil
	}
	clusters := make(map[string]*ClusterConfig, len(m.slots))
	for _, s := range m.slots {
		clusters[s.Name] = s
	}
	clear(m.slots) // keep no slot alive through the scratch slice
	return &Config{
		ListenerName:    m.listener,
		Listener:        m.lis,
		RouteConfigName: rdsName,
		RouteConfig:     m.rc,
		VirtualHost:     m.vh,
		Clusters:        clusters,
		NodeID:          m.msg.nodeID,
	}
}

// slotOf returns the slot of a cluster the walk explored; top is the
// resolution note of the listener and route configuration.
func (m *Manager) slotOf(n *node, top string) ClusterConfig {
	st := m.clusters[n.name]
	switch {
	case n.status == statusFailed:
		return ClusterConfig{Name: n.name, Err: st.err}
	case n.err != nil:
		if detail := n.err.Error(); st.graphErr == nil || st.graphDetail != detail {
			st.graphErr, st.graphDetail = m.msg.resourceError("CDS", n.name, nil, detail), detail
		}
		return ClusterConfig{Name: n.name, Err: st.graphErr}
	}
	s := ClusterConfig{Name: n.name, Cluster: n.cluster, Server: st.server}
	switch n.cluster.Kind {
	case xdsresource.ClusterAggregate:
		s.Leaves = n.leaves
	case xdsresource.ClusterEDS:
		e := m.endpoints[n.cluster.EDSName()]
		s.Endpoints = e.cla
		s.ResolutionNote = m.msg.note(top, st.note, e.dataNote, e.note)
	case xdsresource.ClusterLogicalDNS:
		d := m.dns[n.cluster.DNSHostname]
		s.Endpoints = d.cla
		s.ResolutionNote = m.msg.note(top, st.note, d.note)
	}
	return s
}

// sameSlot reports whether two slots say the same.
func sameSlot(a, b *ClusterConfig) bool {
	if a == b {
		return true
	}
	return a.Name == b.Name && sameErr(a.Err, b.Err) && a.Cluster == b.Cluster && a.Server == b.Server &&
		a.Endpoints == b.Endpoints && a.ResolutionNote == b.ResolutionNote && slices.Equal(a.Leaves, b.Leaves)
}

func sameErr(a, b error) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a == b || a.Error() == b.Error()
}
