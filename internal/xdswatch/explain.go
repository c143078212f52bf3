package xdswatch

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"

	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/status"

	"github.com/xdslens/xdslens/xdsclient"
	"github.com/xdslens/xdslens/xdsclient/xdsconfig"
	"github.com/xdslens/xdslens/xdsgrpc"
)

// explainCommand is the word that makes xdswatch explain one RPC instead
// of watching: xdswatch [flags] explain xds:///LISTENER --method /S/M.
const explainCommand = "explain"

// eventExplain is the line of an explanation.
const eventExplain = "explain"

// explainConfig is what the explain command and its flags say.
type explainConfig struct {
	// on is set for the explain command.
	on bool
	// method is --method; headers are the --header values.
	method  string
	headers headerFlag
}

// register adds --method and --header to fs.
func (e *explainConfig) register(fs *flag.FlagSet) {
	fs.StringVar(&e.method, "method", "", "explain: the RPC's method, /SERVICE/METHOD")
	fs.Var(&e.headers, "header", "explain: KEY=VALUE metadata of the RPC (repeatable)")
}

// take recognizes the explain command as the first of positional, which
// it removes, and checks the flags that go with it (or without it) in cfg.
func (e *explainConfig) take(positional []string, cfg *config) ([]string, error) {
	if len(positional) == 0 || positional[0] != explainCommand {
		for _, f := range []string{"method", "header"} {
			if cfg.given[f] {
				return nil, fmt.Errorf("--%s is a flag of xdswatch explain", f)
			}
		}
		return positional, nil
	}
	e.on = true
	positional = positional[1:]
	if len(positional) != 1 || !isTarget(positional[0]) {
		return nil, fmt.Errorf("explain: want one xds:///LISTENER, got %q", positional)
	}
	if !cfg.given["method"] {
		return nil, errors.New("explain: --method /SERVICE/METHOD is required")
	}
	if err := checkMethod("--method", e.method); err != nil {
		return nil, err
	}
	for _, f := range []string{"stdin", "demo-tour", "serve", "rpc-interval", "rpc-method", "rpc-header", "rpc-concurrency"} {
		if cfg.given[f] {
			return nil, fmt.Errorf("explain: --%s does not apply", f)
		}
	}
	return positional, nil
}

// runExplain explains an RPC through the channel of cfg's one target, with
// the client's resources: it waits, up to --rpc-timeout, for the first
// config, prints the explanation and returns exitOK, or prints the error
// that failed the config and returns exitFailure.
func runExplain(ctx context.Context, cfg *config, client *xdsclient.Client, out *output, errw io.Writer) int {
	t := cfg.targets[0]
	listener, err := t.listener(client.Bootstrap())
	if err != nil {
		fmt.Fprintf(errw, "xdswatch: explain: %s\n", oneLine(err.Error()))
		return exitUsage
	}
	type result struct {
		cfg *xdsconfig.Config
		err error
	}
	got := make(chan result, 1)
	// The channel's authority, as gRPC gives it to the resolver: the
	// listener part of the target, percent-encoded.
	authority := xdsgrpc.Authority(resolver.Target{URL: url.URL{Scheme: "xds", Host: t.authority, Path: t.path}})
	m := xdsconfig.Watch(client, listener, authority, xdsconfig.WatcherFuncs{
		OnUpdate: func(c *xdsconfig.Config) {
			select {
			case got <- result{cfg: c}:
			default:
			}
		},
		OnError: func(err error) {
			select {
			case got <- result{err: err}:
			default:
			}
		},
	})
	defer m.Stop()
	timer := time.NewTimer(cfg.rpc.timeout)
	defer timer.Stop()
	var r result
	select {
	case r = <-got:
	case <-ctx.Done():
		return exitOK
	case <-timer.C:
		fmt.Fprintf(errw, "xdswatch: explain: %s: no config within %v (--rpc-timeout)\n", t.arg, cfg.rpc.timeout)
		return exitFailure
	}
	ts := out.now()
	if r.err != nil {
		e := configErrorLine(ts, t.arg, listener, r.err)
		if out.json {
			out.writeJSON(e)
		} else {
			out.writeText(ts.Format(textTime) + " " + configErrorText(e))
		}
		return exitFailure
	}
	x, err := xdsgrpc.Explain(r.cfg, cfg.explain.method, cfg.explain.headers.md)
	if err != nil {
		fmt.Fprintf(errw, "xdswatch: explain: %s: %s\n", t.arg, oneLine(err.Error()))
		return exitFailure
	}
	e := explainLine(ts, t.arg, x)
	if out.json {
		out.writeJSON(e)
	} else {
		out.writeText(ts.Format(textTime) + " " + explainText(e))
	}
	return exitOK
}

// explainEvent is the JSON line of an explanation.
type explainEvent struct {
	TS          string `json:"ts"`
	Event       string `json:"event"`
	Target      string `json:"target"`
	Method      string `json:"method"`
	VirtualHost string `json:"virtual_host"`
	// Route is the route's name, or "#INDEX"; "" when none matches.
	// RouteShare is the share of such RPCs it takes, below 1 only with a
	// runtime_fraction (absent when 1).
	Route      string   `json:"route"`
	Match      string   `json:"match,omitempty"`
	RouteShare *float64 `json:"route_share,omitempty"`
	// Outcome is "routed", "no_route", "unsupported_action" or
	// "cluster_error"; Error what such an RPC fails with.
	Outcome string      `json:"outcome"`
	Error   *statusJSON `json:"error,omitempty"`
	// Cluster is the route's cluster; "" for weighted clusters, whose
	// weights Weights gives.
	Cluster  string                        `json:"cluster"`
	Weights  map[string]uint32             `json:"weights,omitempty"`
	Clusters map[string]explainClusterJSON `json:"clusters,omitempty"`
	// Hash is the request hash, "0x" and 16 hex digits, when the route's
	// hash policies produce one; HashPolicies describe them.
	Hash         string   `json:"hash,omitempty"`
	HashPolicies []string `json:"hash_policies,omitempty"`
	Plan         planJSON `json:"plan"`
	// Tried are the routes evaluated, in order, with why each matched or
	// not.
	Tried  []triedJSON `json:"tried"`
	Reason string      `json:"reason"`
}

// explainClusterJSON is one cluster the route can choose.
type explainClusterJSON struct {
	Type     string      `json:"type,omitempty"`
	LBPolicy string      `json:"lb_policy,omitempty"`
	Leaves   []string    `json:"leaves,omitempty"`
	Filters  []string    `json:"filters,omitempty"`
	Error    *statusJSON `json:"error,omitempty"`
}

// planJSON is the deadline and retry policy of the RPC.
type planJSON struct {
	Timeout string     `json:"timeout,omitempty"`
	Retry   *retryJSON `json:"retry,omitempty"`
}

// retryJSON is a retry policy (gRFC A44).
type retryJSON struct {
	On           []string `json:"on"`
	MaxAttempts  int      `json:"max_attempts"`
	BaseInterval string   `json:"base_interval"`
	MaxInterval  string   `json:"max_interval"`
}

// triedJSON is one route evaluated.
type triedJSON struct {
	Route   string  `json:"route"`
	Match   string  `json:"match"`
	Matched bool    `json:"matched"`
	Share   float64 `json:"share"`
	Why     string  `json:"why"`
}

// explainLine is the JSON line of x, for the channel of target.
func explainLine(ts time.Time, target string, x *xdsgrpc.Explanation) explainEvent {
	e := explainEvent{
		TS: ts.UTC().Format(time.RFC3339Nano), Event: eventExplain, Target: target, Method: x.Method,
		VirtualHost: x.VirtualHost, Outcome: x.Outcome.String(), HashPolicies: x.HashPolicies, Reason: x.Reason,
		Tried: []triedJSON{},
	}
	if x.Outcome == xdsgrpc.PickSent {
		e.Outcome = "routed"
	}
	if x.Err != nil {
		st := status.Convert(x.Err)
		e.Error = &statusJSON{Code: codeName(st.Code()), Message: st.Message()}
	}
	if r := x.Route; r != nil {
		e.Route, e.Match = r.Label(), r.Match
		if r.Chance < 1 {
			share := r.Chance
			e.RouteShare = &share
		}
	}
	for _, tr := range x.Trials {
		e.Tried = append(e.Tried, triedJSON{Route: tr.Label(), Match: tr.Match, Matched: tr.Matched, Share: tr.Chance, Why: tr.Why})
	}
	if len(x.Choices) == 1 && x.Choices[0].Total == 1 {
		e.Cluster = x.Choices[0].Name
	} else if len(x.Choices) > 0 {
		e.Weights = map[string]uint32{}
		for _, c := range x.Choices {
			e.Weights[c.Name] += c.Weight
		}
	}
	for _, c := range x.Choices {
		if e.Clusters == nil {
			e.Clusters = map[string]explainClusterJSON{}
		}
		cj := explainClusterJSON{Type: c.Type, LBPolicy: c.Policy, Leaves: c.Leaves, Filters: c.Filters}
		if c.Err != nil {
			code, msg := slotError(c.Err)
			cj.Error = &statusJSON{Code: codeName(code), Message: msg}
		}
		e.Clusters[c.Name] = cj
	}
	if x.HasHash {
		e.Hash = fmt.Sprintf("%#016x", x.Hash)
	}
	if x.Timeout > 0 {
		e.Plan.Timeout = x.Timeout.String()
	}
	if rp := x.Retry; rp != nil {
		r := &retryJSON{MaxAttempts: rp.MaxAttempts, BaseInterval: rp.BaseInterval.String(), MaxInterval: rp.MaxInterval.String()}
		for _, c := range rp.On {
			r.On = append(r.On, codeName(c))
		}
		e.Plan.Retry = r
	}
	return e
}

// explainText is the text line of an explanation, without its time:
//
//	xds:///L explain /pkg.Svc/M: virtual host "VH": route #1 (prefix "/pkg.Svc/") is the first that matches ...
func explainText(e explainEvent) string {
	s := fmt.Sprintf("%s explain %s: virtual host %q: %s", e.Target, e.Method, e.VirtualHost, e.Reason)
	if e.Error != nil {
		s += fmt.Sprintf("; such an RPC fails %s: %s", e.Error.Code, e.Error.Message)
	}
	return s
}

// checkMethod checks that m, the value of flag, is a full method name.
func checkMethod(flag, m string) error {
	if service, method, ok := strings.Cut(strings.TrimPrefix(m, "/"), "/"); !strings.HasPrefix(m, "/") || !ok ||
		service == "" || method == "" || strings.Contains(method, "/") {
		return fmt.Errorf("%s %q: want /SERVICE/METHOD, such as %s", flag, m, defaultRPCMethod)
	}
	return nil
}
