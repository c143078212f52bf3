package xdsconfig

import (
	"maps"

	"github.com/xdslens/xdslens/xdsclient/xdsresource"
)

// patch makes the next config when only data changed since the last one
// was made from a complete walk: endpoints or DNS addresses, or ambient
// errors of endpoints and clusters. The graph and what is ready are the
// same, so only the slots of the clusters that use what changed are made
// again, and the rest of the config is shared with the last one. mu is
// held.
func (m *Manager) patch() {
	top := m.msg.join(m.ldsNote, m.rdsNote)
	prev := m.last.Clusters
	var changed []*ClusterConfig
	redo := func(st *clusterState) {
		n := m.walk.nodes[st.name]
		if n == nil || n.status != statusReady || n.err != nil || n.cluster.Kind == xdsresource.ClusterAggregate {
			return // a slot without data: an error or an aggregate
		}
		s := m.slotOf(n, top)
		if p := prev[st.name]; p != nil && sameSlot(p, &s) {
			return
		}
		c := s
		changed = append(changed, &c)
	}
	for _, e := range m.dirtyEDS {
		if e.gen == m.gen {
			for _, st := range e.users.users {
				redo(st)
			}
		}
	}
	for _, d := range m.dirtyDNS {
		if d.gen == m.gen {
			for _, st := range d.users.users {
				redo(st)
			}
		}
	}
	for _, st := range m.dirtyCDS {
		redo(st)
	}
	m.clearDirty()
	if len(changed) == 0 {
		return
	}
	clusters := maps.Clone(prev)
	for _, s := range changed {
		clusters[s.Name] = s
	}
	cfg := *m.last
	cfg.Clusters = clusters
	m.last = &cfg
	m.enqueue(output{cfg: &cfg})
}

// clearDirty empties the dirty lists, keeping their memory.
func (m *Manager) clearDirty() {
	clear(m.dirtyEDS)
	clear(m.dirtyDNS)
	clear(m.dirtyCDS)
	m.dirtyEDS, m.dirtyDNS, m.dirtyCDS = m.dirtyEDS[:0], m.dirtyDNS[:0], m.dirtyCDS[:0]
}
