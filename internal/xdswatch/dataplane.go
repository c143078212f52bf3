package xdswatch

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/xdslens/xdslens/internal/xdswatch/demo"
	"github.com/xdslens/xdslens/telemetry/dataplane"
	"github.com/xdslens/xdslens/xdsclient"
	"github.com/xdslens/xdslens/xdsclient/xdsconfig"
	"github.com/xdslens/xdslens/xdsgrpc"
)

// xdsScheme serves the "xds" scheme with an xdsgrpc.Builder, for
// xdswatch's own channels only (it is given to each with
// grpc.WithResolvers, never registered): people type the xds:///LISTENER
// targets they know from gRPC, and the channels' targets (in channelz, in
// the data plane's hooks) read as typed.
type xdsScheme struct{ *xdsgrpc.Builder }

// Scheme returns "xds".
func (xdsScheme) Scheme() string { return "xds" }

// rpcResult is what one RPC through a channel saw.
type rpcResult struct {
	// target is the channel's argument.
	target string
	code   codes.Code
	// message is the status message, "" with OK.
	message string
	// peer is the backend's address, "" when the RPC reached none;
	// cluster the cluster its route chose, "" when none was.
	peer, cluster string
	// attempts counts the RPC's attempts (1 without retries); fault is
	// the fault injected ("delay", "abort", "delay+abort"), "" for none.
	attempts int
	fault    string
}

// channelSet holds the xds:/// channels, oldest first for each target. Its
// add, cancelOldest and closeAll are used by one goroutine only.
type channelSet struct {
	pool *xdsclient.Pool
	// client is the pool's client of --target, which every channel uses
	// (xdsgrpc.WithPoolTarget): the watches, the channels and CSDS show
	// one cache.
	client *xdsclient.Client
	out    *output
	rpc    rpcConfig
	// meters receive the data-plane metrics of every channel.
	meters meters
	byKey  map[string][]*channel
	order  []string
	// histories keep the channels' config histories for the admin port.
	histories *historySet

	// rpcObservers are called with every RPC's outcome,
	// ejectionObservers with the channel's argument and every ejection or
	// return of outlier detection.
	rpcObservers      observerSet[func(rpcResult)]
	ejectionObservers observerSet[func(string, xdsgrpc.EjectionInfo)]
}

// newChannelSet returns an empty set of channels through the pool's client
// of client.Target(), printing to out, making RPCs as rpc says and
// reporting each channel's data plane (package telemetry/dataplane) to every one of
// meters.
func newChannelSet(pool *xdsclient.Pool, client *xdsclient.Client, out *output, rpc rpcConfig, meters meters) *channelSet {
	return &channelSet{pool: pool, client: client, out: out, rpc: rpc, meters: meters, byKey: map[string][]*channel{}}
}

// observeRPCs has f called with the outcome of every RPC from now on,
// after its line is printed, until the returned func is called.
func (cs *channelSet) observeRPCs(f func(rpcResult)) (remove func()) {
	return cs.rpcObservers.add(f)
}

// observeEjections has f called with the channel's argument and every
// ejection and return of outlier detection in a channel from now on,
// after its line is printed, until the returned func is called.
func (cs *channelSet) observeEjections(f func(target string, i xdsgrpc.EjectionInfo)) (remove func()) {
	return cs.ejectionObservers.add(f)
}

// observerSet holds the funcs that observe one kind of event, added and
// removed from any goroutine.
type observerSet[F any] struct {
	mu  sync.Mutex
	fns map[*F]bool
}

// add adds f until the returned func is called.
func (s *observerSet[F]) add(f F) (remove func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fns == nil {
		s.fns = map[*F]bool{}
	}
	s.fns[&f] = true
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		delete(s.fns, &f)
	}
}

// list returns the funcs added and not removed, to be called without the
// lock.
func (s *observerSet[F]) list() []F {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]F, 0, len(s.fns))
	for f := range s.fns {
		out = append(out, *f)
	}
	return out
}

// observeTourRPCs is observeRPCs for the tour, which reads an RPC's
// target, code, message, attempts and fault.
func (cs *channelSet) observeTourRPCs(f func(demo.RPC)) (remove func()) {
	return cs.observeRPCs(func(r rpcResult) {
		f(demo.RPC{Target: r.target, Code: r.code, Message: r.message, Attempts: r.attempts, Fault: r.fault})
	})
}

// observeTourEjections is observeEjections for the tour, which reads an
// ejection's target, address and whether it is one or a return.
func (cs *channelSet) observeTourEjections(f func(demo.Ejection)) (remove func()) {
	return cs.observeEjections(func(target string, i xdsgrpc.EjectionInfo) {
		f(demo.Ejection{Target: target, Address: i.Address, Ejected: i.Ejected})
	})
}

// channel is one xds:/// argument: a gRPC channel routed by package
// xdsgrpc, its config lines, and its RPCs.
type channel struct {
	set      *channelSet
	t        target
	listener string
	conn     *grpc.ClientConn
	builder  *xdsgrpc.Builder
	stopRPCs context.CancelFunc
	rpcsDone chan struct{}

	// configured is closed once the channel's first config line is
	// printed; configuredOnce closes it.
	configured     chan struct{}
	configuredOnce sync.Once

	mu sync.Mutex // guards last
	// last is what the last text line of the channel's configs said,
	// without what sameConfig leaves out.
	last string
}

// newChannel returns the channel of t in cs, which routes by the Listener
// resource named listener, before its gRPC channel starts.
func newChannel(cs *channelSet, t target, listener string) *channel {
	return &channel{set: cs, t: t, listener: listener, rpcsDone: make(chan struct{}), configured: make(chan struct{})}
}

// add starts one more channel to t and, with --rpc-interval, its RPCs.
func (cs *channelSet) add(t target) error {
	listener, err := t.listener(cs.client.Bootstrap())
	if err != nil {
		return err
	}
	ch := newChannel(cs, t, listener)
	opts := []xdsgrpc.Option{xdsgrpc.WithPoolTarget(cs.client.Target()), xdsgrpc.WithHooks(&xdsgrpc.Hooks{
		ConfigChanged: func(i xdsgrpc.ConfigInfo) { ch.config(i.Config) },
		ConfigFailed:  func(i xdsgrpc.ConfigErrorInfo) { ch.configError(i.Err) },
		Ejection:      ch.ejection,
	})}
	for _, mp := range cs.meters {
		// The channel is xdswatch's own: no other instrumentation counts
		// its RPCs, so gRFC A66's per-call instruments go with the rest.
		opts = append(opts, dataplane.WithMeterProvider(mp), dataplane.WithPerCallMetrics(mp))
	}
	b := xdsgrpc.NewBuilder(cs.pool, opts...)
	ch.conn, err = grpc.NewClient(t.key(), append(b.DialOptions(),
		grpc.WithResolvers(xdsScheme{b}),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		// The config lines come from the resolver, which an idle
		// channel shuts down.
		grpc.WithIdleTimeout(0))...)
	if err != nil {
		return fmt.Errorf("%q: %w", t.arg, err)
	}
	ch.conn.Connect()
	ch.builder = b
	cs.histories.add(b)
	ctx, cancel := context.WithCancel(context.Background())
	ch.stopRPCs = cancel
	if cs.rpc.interval > 0 {
		go ch.makeRPCs(ctx)
	} else {
		close(ch.rpcsDone)
	}
	k := t.key()
	if _, seen := cs.byKey[k]; !seen {
		cs.order = append(cs.order, k)
	}
	cs.byKey[k] = append(cs.byKey[k], ch)
	return nil
}

// close ends the channel's RPCs, then the channel, whose data-plane
// gauges leave the metrics with it: once it returns, the channel prints
// and reports nothing more.
func (ch *channel) close() {
	ch.set.histories.remove(ch.builder)
	ch.stopRPCs()
	<-ch.rpcsDone
	ch.conn.Close()
}

// cancelOldest closes the oldest channel of t, reporting false when t has
// none.
func (cs *channelSet) cancelOldest(t target) bool {
	k := t.key()
	chans := cs.byKey[k]
	if len(chans) == 0 {
		return false
	}
	chans[0].close()
	cs.byKey[k] = chans[1:]
	return true
}

// closeAll closes every channel.
func (cs *channelSet) closeAll() {
	for _, k := range cs.order {
		for _, ch := range cs.byKey[k] {
			ch.close()
		}
		cs.byKey[k] = nil
	}
}

// config prints a config the channel uses.
func (ch *channel) config(c *xdsconfig.Config) {
	ts := ch.set.out.now()
	e := configLine(ts, ch.t.arg, c)
	ch.printConfig(ts, e, configText(e))
	ch.configuredOnce.Do(func() { close(ch.configured) })
}

// ejection prints an endpoint's ejection by outlier detection, or its
// return.
func (ch *channel) ejection(i xdsgrpc.EjectionInfo) {
	ts := ch.set.out.now()
	e := ejectionLine(ts, ch.t.arg, i)
	if ch.set.out.json {
		ch.set.out.writeJSON(e)
	} else {
		ch.set.out.writeText(ts.Format(textTime) + " " + ejectionText(e, i))
	}
	for _, f := range ch.set.ejectionObservers.list() {
		f(ch.t.arg, i)
	}
}

// configError prints the error that failed the channel's whole config.
func (ch *channel) configError(err error) {
	ts := ch.set.out.now()
	e := configErrorLine(ts, ch.t.arg, ch.listener, err)
	ch.printConfig(ts, e, configErrorText(e))
}

// printConfig prints a config or config_error line at ts: event in JSON,
// text in text output, unless it reads as the last line printed.
func (ch *channel) printConfig(ts time.Time, event any, text string) {
	o := ch.set.out
	if o.json {
		o.writeJSON(event)
		return
	}
	if !ch.repeated(text) {
		o.writeText(ts.Format(textTime) + " " + text)
	}
}

// repeated records text as the channel's last config line and reports
// whether the one before said the same, the transport's reasons of
// unreachable servers aside.
func (ch *channel) repeated(text string) bool {
	key := sameConfig(text)
	ch.mu.Lock()
	defer ch.mu.Unlock()
	repeat := key == ch.last
	ch.last = key
	return repeat
}

// sameConfig returns a config line without what may differ between two
// lines that mean the same state: the transport's reason after each
// unreachable server's list of servers tried, up to the next "; ".
func sameConfig(s string) string {
	var b strings.Builder
	for {
		i := strings.Index(s, unreachableCause)
		j := -1
		if i >= 0 {
			j = strings.Index(s[i+len(unreachableCause):], "): ")
		}
		if j < 0 {
			b.WriteString(s)
			return b.String()
		}
		end := i + len(unreachableCause) + j + 1
		b.WriteString(s[:end])
		s = s[end:]
		if k := strings.Index(s, "; "); k >= 0 {
			s = s[k:]
		} else {
			s = ""
		}
	}
}

// makeRPCs makes one RPC per interval, one at a time, until ctx ends, and
// prints each.
func (ch *channel) makeRPCs(ctx context.Context) {
	defer close(ch.rpcsDone)
	var wg sync.WaitGroup
	for range ch.set.rpc.concurrency - 1 {
		wg.Go(func() { ch.rpcLoop(ctx) })
	}
	ch.rpcLoop(ctx)
	wg.Wait()
}

// rpcLoop makes one RPC per interval until ctx ends (--rpc-concurrency
// runs several at once).
func (ch *channel) rpcLoop(ctx context.Context) {
	r := ch.set.rpc
	tick := time.NewTicker(r.interval)
	defer tick.Stop()
	for {
		res := ch.call(ctx, r)
		if ctx.Err() != nil || !ch.report(ctx, res) {
			// Cut short by the end of the channel: not an outcome.
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// report prints the line of one RPC of the channel; for an RPC that a
// config routed (it has a cluster), once the channel's first config line
// is printed. It reports false, having printed nothing, if ctx ended
// first. The channel has a config before its hook prints it, so without
// the wait the line of an RPC made with the first config could come
// before the line of that config.
func (ch *channel) report(ctx context.Context, res rpcResult) bool {
	if res.cluster != "" {
		select {
		case <-ch.configured:
		case <-ctx.Done():
			return false
		}
	}
	ch.set.rpcDone(res)
	return true
}

// call makes one RPC as r says. Like any RPC on a channel that is still
// resolving, one made before the first config waits for it, up to the
// timeout.
func (ch *channel) call(ctx context.Context, r rpcConfig) rpcResult {
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	if len(r.headers.md) > 0 {
		ctx = metadata.NewOutgoingContext(ctx, r.headers.md.Copy())
	}
	var (
		p    peer.Peer
		info xdsgrpc.CallInfo
	)
	// Any response decodes as Empty: its fields are kept as unknown.
	err := ch.conn.Invoke(xdsgrpc.WithCallInfo(ctx, &info), r.method, &emptypb.Empty{}, &emptypb.Empty{}, grpc.Peer(&p))
	st := status.Convert(err)
	res := rpcResult{target: ch.t.arg, code: st.Code(), message: st.Message(), cluster: info.Cluster, attempts: max(info.Attempts(), 1), fault: info.Fault()}
	if p.Addr != nil {
		res.peer = p.Addr.String()
	}
	return res
}

// rpcDone prints the line of one RPC and tells the observers.
func (cs *channelSet) rpcDone(r rpcResult) {
	o := cs.out
	ts := o.now()
	e := rpcEvent{
		TS: ts.UTC().Format(time.RFC3339Nano), Event: eventRPC, Target: r.target, Method: cs.rpc.method,
		Code: codeName(r.code), Message: r.message, Peer: r.peer, Cluster: r.cluster, Attempts: r.attempts, Fault: r.fault,
	}
	if o.json {
		o.writeJSON(e)
	} else {
		o.writeText(ts.Format(textTime) + " " + rpcText(e))
	}
	for _, f := range cs.rpcObservers.list() {
		f(r)
	}
}
