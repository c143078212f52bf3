package xdsconfig

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"time"

	"github.com/xdslens/xdslens/xdsclient/xdsresource"
)

// dnsState is the resolution of the "host:port" of LOGICAL_DNS clusters.
// Its fields but name, cancel and now are guarded by Manager.mu.
type dnsState struct {
	watchState               // name is "host:port", cancel ends the resolution
	now        chan struct{} // ResolveNow

	users
	cla  *xdsresource.ClusterLoadAssignment // nil when resolution failed
	note string                             // why it failed
}

// startDNS starts resolving name on a goroutine of its own. mu is held.
func (m *Manager) startDNS(name string) *dnsState {
	ctx, cancel := context.WithCancel(context.Background())
	st := &dnsState{watchState: watchState{name: name, cancel: cancel}, now: make(chan struct{}, 1)}
	m.dns[name] = st
	m.dnsWG.Add(1)
	go m.resolve(ctx, st)
	return st
}

// resolve resolves st's name until ctx ends: again after a failure, with
// backoff; after a success, every refresh interval if one is set; and when
// ResolveNow asks.
func (m *Manager) resolve(ctx context.Context, st *dnsState) {
	defer m.dnsWG.Done()
	host, port, splitErr := net.SplitHostPort(st.name)
	failures := 0
	for {
		start := time.Now()
		addrs, err := []string(nil), splitErr
		if err == nil {
			addrs, err = m.o.resolver.LookupHost(ctx, host)
		}
		if ctx.Err() != nil {
			return
		}
		if err == nil && len(addrs) == 0 {
			err = errors.New("no addresses")
		}
		m.handle(&st.dead, func() { m.onDNS(st, host, port, addrs, err) })
		wait := m.o.refresh
		if err != nil {
			wait = m.o.backoff(failures)
			failures++
		} else {
			failures = 0
		}
		if !m.sleep(ctx, st, wait, start) {
			return
		}
	}
}

// sleep waits for the next resolution of st: wait after now (never, if 0),
// or a ResolveNow, carried out no sooner than the minimum interval after
// start. It returns false when ctx ends.
func (m *Manager) sleep(ctx context.Context, st *dnsState, wait time.Duration, start time.Time) bool {
	var timeout <-chan time.Time
	if wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-ctx.Done():
		return false
	case <-timeout:
		return true
	case <-st.now:
	}
	if d := m.o.minInterval - time.Since(start); d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
		}
	}
	return true
}

// onDNS takes a resolution of st. As gRPC C-core does, a failure leaves
// the cluster with no endpoints, whatever an earlier resolution found, and
// its resolution note says why. mu is held.
func (m *Manager) onDNS(st *dnsState, host, port string, addrs []string, err error) {
	if st.heard {
		m.dirtyDNS = append(m.dirtyDNS, st)
		m.dataEvent = true
	}
	st.heard = true
	if err != nil {
		st.cla = nil
		st.note = m.msg.withNode(bound(fmt.Sprintf("DNS resolution failed for %q: %v", st.name, err), maxPartLen))
		return
	}
	st.note = ""
	eps := make([]string, 0, len(addrs))
	for _, a := range addrs {
		if ep := net.JoinHostPort(a, port); !slices.Contains(eps, ep) {
			eps = append(eps, ep)
		}
	}
	if st.cla != nil && slices.Equal(st.cla.Localities[0].Endpoints[0].Addresses, eps) {
		return
	}
	st.cla = &xdsresource.ClusterLoadAssignment{
		ClusterName: st.name,
		Localities: []xdsresource.Locality{{
			Weight: 1,
			Endpoints: []xdsresource.Endpoint{{
				Addresses: eps,
				Health:    xdsresource.HealthUnknown,
				Weight:    1,
				Hostname:  host,
			}},
		}},
	}
}
