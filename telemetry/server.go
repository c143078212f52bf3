package telemetry

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/xdslens/xdslens/xdsclient"
	"github.com/xdslens/xdslens/xdsserver"
)

// The instruments of xDS-enabled servers, fed by the hooks of an
// xdsserver.Server (NewServerMetrics).
const (
	// MetricServerServing is an Int64ObservableGauge, unit {bool}, labels
	// xdslens.address and xdslens.listener: 1 while the address serves
	// (gRFC A36's SERVING), 0 while it waits for its Listener or does not
	// serve. The series goes when Serve returns.
	MetricServerServing = "xdslens.xds_server.serving"
	// MetricServerModeChanges is an Int64Counter, unit {change}, labels
	// xdslens.address and mode (SERVING, NOT_SERVING): serving mode
	// changes, and NOT_SERVING again for a new reason.
	MetricServerModeChanges = "xdslens.xds_server.serving_mode_changes"
	// MetricServerConnections is an Int64ObservableGauge, unit
	// {connection}, labels xdslens.address and xdslens.filter_chain: the
	// open connections by the filter chain that serves them.
	MetricServerConnections = "xdslens.xds_server.connections"
	// MetricServerConnectionsAccepted is an Int64Counter, unit
	// {connection}, labels xdslens.address and xdslens.filter_chain:
	// connections matched to a chain.
	MetricServerConnectionsAccepted = "xdslens.xds_server.connections_accepted"
	// MetricServerConnectionsRefused is an Int64Counter, unit
	// {connection}, labels xdslens.address and reason (not_serving,
	// no_filter_chain): connections closed as they came.
	MetricServerConnectionsRefused = "xdslens.xds_server.connections_refused"
	// MetricServerConnectionsDrained is an Int64Counter, unit
	// {connection}, labels xdslens.address, xdslens.filter_chain and
	// reason (listener_changed, not_serving): connections told to go
	// away.
	MetricServerConnectionsDrained = "xdslens.xds_server.connections_drained"
	// MetricServerDrainForcedCloses is an Int64Counter, unit {connection},
	// labels xdslens.address, xdslens.filter_chain and reason
	// (goaway_ignored, grace_time): drained connections the server closed
	// itself, because their client opened a stream after the final GOAWAY
	// (xdsserver.Hooks.GoAwayIgnored) or because RPCs were still open on
	// them at the drain grace time (DrainGraceExpired). Either way the
	// RPCs still on the connection fail.
	MetricServerDrainForcedCloses = "xdslens.xds_server.drain_forced_closes"
	// MetricServerHandshakeFailures is an Int64Counter, unit {handshake},
	// labels xdslens.address and xdslens.filter_chain: failed TLS (or
	// fallback credentials') handshakes.
	MetricServerHandshakeFailures = "xdslens.xds_server.handshake_failures"
	// MetricServerRBACDecisions is an Int64Counter, unit {decision},
	// labels xdslens.address, xdslens.filter_chain, xdslens.rbac.filter,
	// xdslens.rbac.policy (the policy that matched, "" when none did) and
	// xdslens.rbac.decision (allow, deny): every decision of an RBAC
	// filter.
	MetricServerRBACDecisions = "xdslens.xds_server.rbac_decisions"
)

// Labels of the server instruments.
const (
	KeyAddress      = "xdslens.address"
	KeyListener     = "xdslens.listener"
	KeyFilterChain  = "xdslens.filter_chain"
	KeyRBACFilter   = "xdslens.rbac.filter"
	KeyRBACPolicy   = "xdslens.rbac.policy"
	KeyRBACDecision = "xdslens.rbac.decision"
	KeyMode         = "mode"
	KeyReason       = "reason"
)

// ServerMetrics turns the hooks of an xdsserver.Server into OpenTelemetry
// instruments: the serving state of each address, connections by filter
// chain (open, accepted, refused, drained, and closed by force after a
// drain), handshake failures and RBAC decisions by policy. Its hooks cost a map lookup under a read lock once
// a label set has been seen. Close it to detach it.
type ServerMetrics struct {
	srv                                                         *xdsserver.Server
	modes, accepted, refused, drained, forced, handshakes, rbac metric.Int64Counter
	reg                                                         metric.Registration
	remove                                                      func()
	serving, open                                               metric.Int64ObservableGauge

	mu    sync.RWMutex
	attrs map[serverKey][]metric.AddOption
	conns map[connKey]int64 // open connections
}

// serverKey is one label set of a server counter; kind tells the counter.
type serverKey struct {
	kind                 uint8
	addr, chain, a, b, c string
}

type connKey struct{ addr, chain string }

const (
	kindMode uint8 = iota
	kindAccepted
	kindRefused
	kindDrained
	kindForced
	kindHandshake
	kindRBAC
)

// NewServerMetrics creates the server instruments from the configured
// MeterProvider and adds hooks to srv.
func NewServerMetrics(srv *xdsserver.Server, opts ...Option) (*ServerMetrics, error) {
	if srv == nil {
		return nil, errors.New("telemetry: nil *xdsserver.Server")
	}
	meter := newConfig(opts).mp.Meter(ScopeName, metric.WithInstrumentationVersion(xdsclient.Version))
	m := &ServerMetrics{srv: srv, attrs: map[serverKey][]metric.AddOption{}, conns: map[connKey]int64{}}
	var errs []error
	counter := func(name, unit, desc string) metric.Int64Counter {
		c, err := meter.Int64Counter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		errs = appendErr(errs, name, err)
		return c
	}
	gauge := func(name, unit, desc string) metric.Int64ObservableGauge {
		g, err := meter.Int64ObservableGauge(name, metric.WithUnit(unit), metric.WithDescription(desc))
		errs = appendErr(errs, name, err)
		return g
	}
	m.modes = counter(MetricServerModeChanges, "{change}", "Serving mode changes of the addresses of xDS-enabled servers.")
	m.accepted = counter(MetricServerConnectionsAccepted, "{connection}", "Connections an xDS-enabled server matched to a filter chain.")
	m.refused = counter(MetricServerConnectionsRefused, "{connection}", "Connections an xDS-enabled server closed as they came: not serving, or no filter chain matched.")
	m.drained = counter(MetricServerConnectionsDrained, "{connection}", "Connections an xDS-enabled server told to go away: their filter chain changed, or the address stopped serving.")
	m.forced = counter(MetricServerDrainForcedCloses, "{connection}", "Drained connections an xDS-enabled server closed with their RPCs: the client opened a stream after the final GOAWAY, or RPCs were open at the drain grace time.")
	m.handshakes = counter(MetricServerHandshakeFailures, "{handshake}", "Failed TLS handshakes of connections to xDS-enabled servers.")
	m.rbac = counter(MetricServerRBACDecisions, "{decision}", "Decisions of the RBAC filters of xDS-enabled servers, by the policy that matched.")
	m.serving = gauge(MetricServerServing, "{bool}", "1 while the address of an xDS-enabled server serves (gRFC A36 SERVING), else 0.")
	m.open = gauge(MetricServerConnections, "{connection}", "Open connections of an xDS-enabled server, by filter chain.")
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("telemetry: %w", err)
	}
	var err error
	m.reg, err = meter.RegisterCallback(m.observe, m.serving, m.open)
	if err != nil {
		return nil, fmt.Errorf("telemetry: %w", err)
	}
	m.remove = srv.AddHooks(&xdsserver.Hooks{
		ServingModeChanged: m.modeChanged,
		ConnectionAccepted: m.connAccepted,
		ConnectionRefused:  m.connRefused,
		ConnectionClosed:   m.connClosed,
		ConnectionDrained:  m.connDrained,
		GoAwayIgnored:      m.goAwayIgnored,
		DrainGraceExpired:  m.graceExpired,
		HandshakeFailed:    m.handshakeFailed,
		AuthzDecision:      m.authz,
	})
	return m, nil
}

func appendErr(errs []error, name string, err error) []error {
	if err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", name, err))
	}
	return errs
}

// Close removes the hooks and stops the gauges. It may be called more than
// once.
func (m *ServerMetrics) Close() {
	m.remove()
	m.reg.Unregister()
}

func (m *ServerMetrics) observe(_ context.Context, o metric.Observer) error {
	for _, c := range m.srv.ServingModes() {
		v := int64(0)
		if c.Mode == xdsserver.ModeServing {
			v = 1
		}
		o.ObserveInt64(m.serving, v, metric.WithAttributes(attribute.String(KeyAddress, c.Address), attribute.String(KeyListener, c.Listener)))
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	for k, n := range m.conns {
		o.ObserveInt64(m.open, n, metric.WithAttributes(attribute.String(KeyAddress, k.addr), attribute.String(KeyFilterChain, k.chain)))
	}
	return nil
}

// attr returns the options of label set k, made once.
func (m *ServerMetrics) attr(k serverKey) []metric.AddOption {
	m.mu.RLock()
	a, ok := m.attrs[k]
	m.mu.RUnlock()
	if ok {
		return a
	}
	kvs := []attribute.KeyValue{attribute.String(KeyAddress, k.addr)}
	switch k.kind {
	case kindMode:
		kvs = append(kvs, attribute.String(KeyMode, k.a))
	case kindAccepted, kindHandshake:
		kvs = append(kvs, attribute.String(KeyFilterChain, k.chain))
	case kindRefused:
		kvs = append(kvs, attribute.String(KeyReason, k.a))
	case kindDrained, kindForced:
		kvs = append(kvs, attribute.String(KeyFilterChain, k.chain), attribute.String(KeyReason, k.a))
	case kindRBAC:
		kvs = append(kvs, attribute.String(KeyFilterChain, k.chain), attribute.String(KeyRBACFilter, k.a),
			attribute.String(KeyRBACPolicy, k.b), attribute.String(KeyRBACDecision, k.c))
	}
	a = []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(kvs...))}
	m.mu.Lock()
	m.attrs[k] = a
	m.mu.Unlock()
	return a
}

// modeChanged counts a serving mode change. An address that starts has
// its mode change and refusal series born at 0, so that the increase of
// the first shows.
func (m *ServerMetrics) modeChanged(c xdsserver.ServingModeChange) {
	ctx := context.Background()
	if c.Mode == xdsserver.ModeStarting {
		for _, mode := range []xdsserver.Mode{xdsserver.ModeServing, xdsserver.ModeNotServing} {
			m.modes.Add(ctx, 0, m.attr(serverKey{kind: kindMode, addr: c.Address, a: mode.String()})...)
		}
		for _, reason := range []string{"not_serving", "no_filter_chain"} {
			m.refused.Add(ctx, 0, m.attr(serverKey{kind: kindRefused, addr: c.Address, a: reason})...)
		}
		return
	}
	m.modes.Add(ctx, 1, m.attr(serverKey{kind: kindMode, addr: c.Address, a: c.Mode.String()})...)
}

func (m *ServerMetrics) connAccepted(c xdsserver.ConnInfo) {
	ctx := context.Background()
	m.accepted.Add(ctx, 1, m.attr(serverKey{kind: kindAccepted, addr: c.Address, chain: c.Chain})...)
	// A chain's failure, drain and forced close series exist, at 0, from its first
	// connection.
	m.handshakes.Add(ctx, 0, m.attr(serverKey{kind: kindHandshake, addr: c.Address, chain: c.Chain})...)
	for _, reason := range []string{"listener_changed", "not_serving"} {
		m.drained.Add(ctx, 0, m.attr(serverKey{kind: kindDrained, addr: c.Address, chain: c.Chain, a: reason})...)
	}
	for _, reason := range []string{forcedGoAwayIgnored, forcedGraceTime} {
		m.forced.Add(ctx, 0, m.attr(serverKey{kind: kindForced, addr: c.Address, chain: c.Chain, a: reason})...)
	}
	m.mu.Lock()
	m.conns[connKey{c.Address, c.Chain}]++
	m.mu.Unlock()
}

func (m *ServerMetrics) connClosed(c xdsserver.ConnInfo) {
	k := connKey{c.Address, c.Chain}
	m.mu.Lock()
	if m.conns[k]--; m.conns[k] <= 0 {
		delete(m.conns, k)
	}
	m.mu.Unlock()
}

func (m *ServerMetrics) connRefused(c xdsserver.ConnRefusedInfo) {
	reason := "no_filter_chain"
	if c.NotServing {
		reason = "not_serving"
	}
	m.refused.Add(context.Background(), 1, m.attr(serverKey{kind: kindRefused, addr: c.Address, a: reason})...)
}

func (m *ServerMetrics) connDrained(c xdsserver.ConnDrainInfo) {
	reason := "listener_changed"
	if c.NotServing {
		reason = "not_serving"
	}
	m.drained.Add(context.Background(), 1, m.attr(serverKey{kind: kindDrained, addr: c.Address, chain: c.Chain, a: reason})...)
}

// The reasons of MetricServerDrainForcedCloses.
const (
	forcedGoAwayIgnored = "goaway_ignored"
	forcedGraceTime     = "grace_time"
)

func (m *ServerMetrics) goAwayIgnored(c xdsserver.ConnInfo) { m.forcedClose(c, forcedGoAwayIgnored) }

func (m *ServerMetrics) graceExpired(c xdsserver.ConnInfo) { m.forcedClose(c, forcedGraceTime) }

func (m *ServerMetrics) forcedClose(c xdsserver.ConnInfo, reason string) {
	m.forced.Add(context.Background(), 1, m.attr(serverKey{kind: kindForced, addr: c.Address, chain: c.Chain, a: reason})...)
}

func (m *ServerMetrics) handshakeFailed(h xdsserver.HandshakeInfo) {
	m.handshakes.Add(context.Background(), 1, m.attr(serverKey{kind: kindHandshake, addr: h.Address, chain: h.Chain})...)
}

func (m *ServerMetrics) authz(a xdsserver.AuthzInfo) {
	decision := "deny"
	if a.Allowed {
		decision = "allow"
	}
	m.rbac.Add(context.Background(), 1, m.attr(serverKey{kind: kindRBAC, addr: a.Address, chain: a.Chain, a: a.Filter, b: a.Policy, c: decision})...)
}
