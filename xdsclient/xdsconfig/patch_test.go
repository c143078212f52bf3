package xdsconfig

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/xdslens/xdslens/xdsclient/xdsresource"
)

// A config patched after data-only changes equals the one a full walk of
// the same state makes: after each of a long random series of endpoint,
// endpoint-error and ambient-error events, walking everything again finds
// nothing to change.
func TestPatchEqualsFullWalk(t *testing.T) {
	// Routes to agg (an aggregate of c0..c3 and sub, sub of c4, c5) and to
	// c6..c9; c1 and c2 share EDS resource "shared".
	rc := routeConfig(10, 0)
	rc.VirtualHosts[0].Routes[0].Action.Cluster = "agg"
	m, w := injected(t, rc, func(name string) *xdsresource.Cluster {
		switch name {
		case "agg":
			return &xdsresource.Cluster{Name: name, Kind: xdsresource.ClusterAggregate, PrioritizedClusters: []string{"c0", "c1", "c2", "c3", "sub"}}
		case "sub":
			return &xdsresource.Cluster{Name: name, Kind: xdsresource.ClusterAggregate, PrioritizedClusters: []string{"c4", "c5"}}
		case "c1", "c2":
			return &xdsresource.Cluster{Name: name, Kind: xdsresource.ClusterEDS, EDSServiceName: "shared"}
		}
		return &xdsresource.Cluster{Name: name, Kind: xdsresource.ClusterEDS}
	})
	done := make(chan struct{})
	drained := make(chan struct{})
	go func() { // takes the configs, which the test reads from the manager
		defer close(drained)
		for {
			select {
			case <-w:
			case <-done:
				return
			}
		}
	}()
	defer func() { m.Stop(); close(done); <-drained }()
	rnd := rand.New(rand.NewPCG(1, 2))
	for i := range 300 {
		m.mu.Lock()
		var eds []*edsState
		for _, e := range m.endpoints {
			eds = append(eds, e)
		}
		var cds []*clusterState
		for _, c := range m.clusters {
			cds = append(cds, c)
		}
		m.mu.Unlock()
		e, c := eds[rnd.IntN(len(eds))], cds[rnd.IntN(len(cds))]
		var event func()
		switch rnd.IntN(5) {
		case 0:
			event = func() { m.onEndpoints(e, resource(endpoints(e.name, 1+rnd.IntN(3))), nil) }
		case 1:
			event = func() { m.onEndpoints(e, nil, errors.New("gone")) }
		case 2:
			event = func() { m.onEndpoints(e, resource(&xdsresource.ClusterLoadAssignment{ClusterName: e.name}), nil) }
		case 3:
			err := []error{nil, fmt.Errorf("eds ambient %d", i)}[rnd.IntN(2)]
			event = func() { e.note = m.ambientPart("EDS", e.name, err); m.endpointsData(e) }
		case 4:
			err := []error{nil, fmt.Errorf("cds ambient %d", i)}[rnd.IntN(2)]
			event = func() {
				c.note = m.ambientPart("CDS", c.name, err)
				m.dirtyCDS, m.dataEvent = append(m.dirtyCDS, c), true
			}
		}
		inject(m, new(bool), event)
		waitFor(t, m, func() bool { return !m.dirty })

		m.mu.Lock()
		if m.structural {
			t.Fatalf("event %d was taken as structural", i)
		}
		patched := m.last
		m.structural = true
		m.update()
		if got := m.pending.cfg; got != nil {
			t.Errorf("event %d: a full walk changes the patched config: %s", i, Diff(patched, got))
		}
		m.mu.Unlock()
	}
}
