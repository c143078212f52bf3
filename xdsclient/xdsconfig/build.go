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
	structural := m.structural
	m.structural = false
	if !structural && m.walkValid && m.walkReady && m.last != nil && !m.lastFailed {
		m.patch()
		return
	}
	m.clearDirty()
	if m.lis == nil || m.vh == nil {
		// Nothing to walk from: keep every watch (as gRPC C-core does) for
		// when the listener or route configuration comes back.
		m.walkValid = false
		return
	}
	m.nEDS, m.nDNS = 0, 0
	m.gen++
	m.walk.reset(m.lookupFn)
	ready := true
	for _, name := range m.roots {
		if !m.walk.root(name) {
			ready = false
		}
	}
	m.walkValid, m.walkReady = true, ready
	m.reconcile()
	if !ready {
		return
	}
	cfg := m.build()
	if cfg == nil {
		return
	}
	m.last, m.lastFailed = cfg, false
	m.enqueue(output{cfg: cfg})
}

// lookup is the walk's lookupFunc: it watches what a cluster needs.
func (m *Manager) lookup(name string) (*xdsresource.Cluster, clusterStatus, *clusterState) {
	st := m.clusters[name]
	switch {
	case st == nil:
		return nil, statusPending, m.watchCluster(name)
	case !st.heard:
		return nil, statusPending, st
	case st.err != nil:
		return nil, statusFailed, st
	}
	c := st.cluster
	heard := true
	switch st.kind {
	case xdsresource.ClusterEDS:
		if e := st.eds; e == nil || e.dead || e.name != st.endpoints {
			if st.eds = m.endpoints[st.endpoints]; st.eds == nil {
				st.eds = m.watchEndpoints(st.endpoints)
			}
		}
		heard = m.use(&st.eds.watchState, &st.eds.users, &m.nEDS, st)
	case xdsresource.ClusterLogicalDNS:
		if d := st.dns; d == nil || d.dead || d.name != st.endpoints {
			if st.dns = m.dns[st.endpoints]; st.dns == nil {
				st.dns = m.startDNS(st.endpoints)
			}
		}
		heard = m.use(&st.dns.watchState, &st.dns.users, &m.nDNS, st)
	}
	if !heard {
		return c, statusPending, st
	}
	return c, statusReady, st
}

// use records that cluster st gets its endpoints from source w (of users
// u, counted in *n), and reports whether w has been heard from.
func (m *Manager) use(w *watchState, u *users, n *int, st *clusterState) bool {
	if u.add(m.gen, st) {
		*n++
	}
	return w.heard
}

// reconcile cancels the watches that neither the current resources nor
// the config in use (delivered) nor the one about to be (pending) need. A
// cluster that a new route configuration no longer names thus stays
// watched until a config without it is delivered (gRFC A74). mu is held.
func (m *Manager) reconcile() {
	// What the walk reached is watched; when the counts are equal, nothing
	// else is.
	if len(m.clusters) == len(m.walk.nodes) && len(m.endpoints) == m.nEDS && len(m.dns) == m.nDNS {
		return
	}
	for name, st := range m.clusters {
		if m.walk.nodes[name] == nil && !m.delivered.holds(name) && !m.pending.holds(name) {
			st.dead = true
			m.cancels = append(m.cancels, st.cancel)
			delete(m.clusters, name)
		}
	}
	var k *keptNames // only when something may go
	kept := func() *keptNames {
		if k == nil {
			k = m.keptNames()
		}
		return k
	}
	for name, st := range m.endpoints {
		if st.users.gen != m.gen && !kept().eds[name] {
			st.dead = true
			m.cancels = append(m.cancels, st.cancel)
			delete(m.endpoints, name)
		}
	}
	for name, st := range m.dns {
		if st.users.gen != m.gen && !kept().dns[name] {
			st.dead = true
			st.cancel()
			delete(m.dns, name)
		}
	}
}

// keptNames are the EDS resources and DNS names that the delivered and
// pending configs use.
type keptNames struct{ eds, dns map[string]bool }

func (m *Manager) keptNames() *keptNames {
	k := &keptNames{eds: map[string]bool{}, dns: map[string]bool{}}
	for _, cfg := range []*Config{m.delivered.cfg, m.pending.cfg} {
		if cfg == nil {
			continue
		}
		for _, s := range cfg.Clusters {
			if !s.IsLeaf() {
				continue
			}
			if s.Cluster.Kind == xdsresource.ClusterEDS {
				k.eds[s.Cluster.EDSName()] = true
			} else {
				k.dns[s.Cluster.DNSHostname] = true
			}
		}
	}
	return k
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
	reused, present := 0, 0
	for _, n := range m.walk.order {
		if n.status == statusPending {
			continue // below an aggregate that failed
		}
		s := m.slotOf(n, top)
		p := prev[n.name]
		if p != nil {
			present++
			if sameSlot(p, &s) {
				m.slots = append(m.slots, p)
				reused++
				continue
			}
		}
		c := s // only a new slot escapes
		m.slots = append(m.slots, &c)
	}
	rdsName := ""
	if m.rds != nil {
		rdsName = m.rds.name
	}
	if l := m.last; l != nil && !m.lastFailed && reused == len(l.Clusters) && reused == len(m.slots) &&
		l.Listener == m.lis && l.RouteConfig == m.rc && l.VirtualHost == m.vh && l.RouteConfigName == rdsName &&
		l.ListenerVersion == m.lisVersion && l.RouteConfigVersion == m.rcVersion {
		return nil
	}
	var clusters map[string]*ClusterConfig
	switch {
	case prev != nil && reused == len(prev) && reused == len(m.slots):
		clusters = prev // the same slots: share the immutable map
	case prev != nil && present == len(prev) && present == len(m.slots):
		// Cloning the last map and replacing the slots that changed is
		// much cheaper than filling a new one.
		clusters = maps.Clone(prev)
		for _, s := range m.slots {
			if clusters[s.Name] != s {
				clusters[s.Name] = s
			}
		}
	default:
		clusters = make(map[string]*ClusterConfig, len(m.slots))
		for _, s := range m.slots {
			clusters[s.Name] = s
		}
	}
	clear(m.slots) // keep no slot alive through the scratch slice
	return &Config{
		ListenerName:       m.listener,
		Listener:           m.lis,
		ListenerVersion:    m.lisVersion,
		RouteConfigName:    rdsName,
		RouteConfig:        m.rc,
		RouteConfigVersion: m.rcVersion,
		VirtualHost:        m.vh,
		Clusters:           clusters,
		NodeID:             m.msg.nodeID,
	}
}

// slotOf returns the slot of a cluster the walk explored; top is the
// resolution note of the listener and route configuration.
func (m *Manager) slotOf(n *node, top string) ClusterConfig {
	st := n.state
	switch {
	case n.status == statusFailed:
		return ClusterConfig{Name: n.name, Err: st.err}
	case n.err != nil:
		if detail := n.err.Error(); st.graphErr == nil || st.graphDetail != detail {
			st.graphErr, st.graphDetail = m.msg.resourceError("CDS", n.name, nil, detail), detail
		}
		return ClusterConfig{Name: n.name, Err: st.graphErr}
	}
	s := ClusterConfig{Name: n.name, Cluster: n.cluster, Server: st.server, Version: st.version}
	switch st.kind {
	case xdsresource.ClusterAggregate:
		s.Leaves = n.leaves
	case xdsresource.ClusterEDS:
		e := st.eds
		s.Endpoints, s.EndpointsVersion = e.cla, e.version
		s.ResolutionNote = m.msg.note(top, st.note, e.dataNote, e.note)
	case xdsresource.ClusterLogicalDNS:
		d := st.dns
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
		a.Version == b.Version && a.EndpointsVersion == b.EndpointsVersion && a.Endpoints == b.Endpoints && a.ResolutionNote == b.ResolutionNote && slices.Equal(a.Leaves, b.Leaves)
}

func sameErr(a, b error) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a == b || a.Error() == b.Error()
}
