package xdsclient

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	rpcstatus "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/keepalive"

	"github.com/xdslens/xdslens/xdsclient/bootstrap"
	"github.com/xdslens/xdslens/xdsclient/internal/health"
	"github.com/xdslens/xdslens/xdsclient/internal/xerr"
)

// channel is the connection to one xDS server and its ADS stream, shared by
// every resource subscribed on that server. Fields after mu-guarded are
// guarded by Client.mu.
type channel struct {
	c      *Client
	server *bootstrap.ServerConfig
	uri    string
	delta  bool // the server is spoken to over incremental xDS
	cc     *grpc.ClientConn
	wake   chan struct{} // tells the sender that a request is due
	kick   chan struct{} // tells the stream loop that something is subscribed
	ctx    context.Context
	cancel context.CancelFunc

	// mu-guarded
	types    map[string]*typeState
	auths    map[*authority]struct{} // the authorities that use this server
	closed   bool
	nEntries int
	timed    map[*entry]struct{}
	h        health.State // gRFC A57: the server's health, its stream, its connectivity

	// The does-not-exist timers of the entries in timed share one runtime
	// timer, wheel, set for the first slot of timerQ: every timer of a
	// channel lasts as long, so the order they start in is the order they
	// fire in. Slots of stopped timers are skipped when they come due.
	timerQ []timerSlot
	wheel  *time.Timer
}

// timerSlot is the does-not-exist timer of e started as generation gen,
// due at at.
type timerSlot struct {
	e   *entry
	gen uint32
	at  time.Time
}

// typeState is the per-type state of the sub-stream of one type on one
// server, State of the World or delta. The entries subscribed on the server
// are those of the type whose authority uses it (authority.uses).
type typeState struct {
	n        int    // entries of the type subscribed on the server
	version  string // last accepted version_info; kept across streams (SotW)
	nonce    string // last nonce on the current stream
	dirty    bool   // a request is due
	nack     error  // error_detail of the request that is due
	sentOnce bool   // a request of this type went out on this stream
	deltaSubs
}

// reset prepares ts for a new stream.
func (ts *typeState) reset() {
	ts.nonce = ""
	ts.sentOnce = false
	ts.nack = nil
	ts.dirty = ts.n > 0
	ts.deltaSubs = deltaSubs{resync: true}
}

func (tx *txn) channel(s *bootstrap.ServerConfig) (*channel, error) {
	c := tx.c
	key := s.Key()
	if ch := c.channels[key]; ch != nil {
		return ch, nil
	}
	cc, err := c.dial(s)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(c.ctx)
	ch := &channel{
		c: c, server: s, uri: s.URI, delta: c.o.deltaFor(s), cc: cc,
		wake: make(chan struct{}, 1), kick: make(chan struct{}, 1),
		ctx: ctx, cancel: cancel,
		types: map[string]*typeState{}, auths: map[*authority]struct{}{},
	}
	c.channels[key] = ch
	c.wg.Add(2)
	go ch.watchConnectivity()
	go ch.runStreams()
	return ch, nil
}

// dial makes a connection to the xDS server s with the client's settings:
// the server's channel and call credentials, keepalive and the response
// size limit.
func (c *Client) dial(s *bootstrap.ServerConfig) (*grpc.ClientConn, error) {
	opts, err := s.DialOptions()
	if err != nil {
		return nil, fmt.Errorf("xDS server %q: %w", s.URI, err)
	}
	opts = append(opts,
		grpc.WithKeepaliveParams(keepalive.ClientParameters{Time: c.o.keepaliveTime, Timeout: c.o.keepaliveWait}),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(c.o.maxResponseSize)))
	cc, err := grpc.NewClient(s.URI, opts...)
	if err != nil {
		return nil, fmt.Errorf("xDS server %q: %w", s.URI, err)
	}
	return cc, nil
}

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

func (ch *channel) subscribe(tx *txn, e *entry) {
	ts := ch.types[e.kind.typ.TypeURL()]
	if ts == nil {
		ts = &typeState{}
		ch.types[e.kind.typ.TypeURL()] = ts
	}
	ts.n++
	ts.dirty = true
	if ch.delta {
		ts.subscribe(e)
	}
	ch.nEntries++
	signal(ch.kick)
	signal(ch.wake)
}

func (ch *channel) unsubscribe(tx *txn, e *entry) {
	ch.stopTimer(tx, e)
	ts := ch.types[e.kind.typ.TypeURL()]
	if ch.delta && ch.h.Stream != 0 && e.sentStream(ch) == ch.h.Stream {
		ts.unsubscribe(e.name)
	}
	e.forgetSent(ch)
	ts.n--
	ts.dirty = true
	ch.nEntries--
	signal(ch.wake)
}

// maybeStartTimer starts e's does-not-exist timer if gRFC A57 allows:
// the subscription went out on the current stream, the channel is seen
// READY, and nothing has been received for e.
func (ch *channel) maybeStartTimer(tx *txn, e *entry) {
	if e.timing || e.removed || e.active() != ch || e.state != StateRequested || !ch.h.TimersRun() || e.sentStream(ch) != ch.h.Stream {
		return
	}
	c := ch.c
	d, _ := c.resourceTimeout(ch)
	e.timerGen++
	e.timing = true
	now := tx.clock()
	ch.timerQ = append(ch.timerQ, timerSlot{e: e, gen: e.timerGen, at: now.Add(d)})
	if len(ch.timerQ) == 1 {
		if ch.wheel == nil {
			ch.wheel = time.AfterFunc(d, ch.onWheel)
		} else {
			ch.wheel.Reset(d)
		}
	}
	if ch.timed == nil {
		ch.timed = map[*entry]struct{}{}
	}
	ch.timed[e] = struct{}{}
	if f := c.hooks().ResourceTimerStarted; f != nil {
		info := ResourceTimerInfo{Target: c.o.target, Server: ch.uri, TypeURL: e.kind.typ.TypeURL(), Name: e.name, Duration: d, At: now}
		tx.hook(func() { f(info) })
	}
}

// untime removes e from ch.timed. Once no timer runs, the slots left are
// stale and the wheel need not fire; the map is dropped too, since after a
// large subscription it would keep room for every entry.
func (ch *channel) untime(e *entry) {
	delete(ch.timed, e)
	if len(ch.timed) == 0 {
		ch.timed = nil
		ch.timerQ = nil
		if ch.wheel != nil {
			ch.wheel.Stop()
		}
	}
}

// onWheel fires the timers that are due, then sets the wheel for the next
// slot.
func (ch *channel) onWheel() {
	c := ch.c
	tx := c.lock()
	defer tx.unlock()
	if c.closed || ch.closed {
		return
	}
	now := tx.clock()
	for len(ch.timerQ) > 0 && !ch.timerQ[0].at.After(now) {
		s := ch.timerQ[0]
		ch.timerQ[0] = timerSlot{}
		ch.timerQ = ch.timerQ[1:]
		if _, ok := ch.timed[s.e]; ok {
			tx.onTimer(s.e, s.gen)
		}
	}
	if len(ch.timerQ) > 0 {
		ch.wheel.Reset(ch.timerQ[0].at.Sub(now))
	}
}

// stopTimer stops e's timer if it runs for this channel.
func (ch *channel) stopTimer(tx *txn, e *entry) {
	if !e.timing {
		return
	}
	if _, ok := ch.timed[e]; !ok {
		return
	}
	e.timing = false
	e.timerGen++
	ch.untime(e)
	c := ch.c
	if f := c.hooks().ResourceTimerStopped; f != nil {
		d, _ := c.resourceTimeout(ch)
		info := ResourceTimerInfo{Target: c.o.target, Server: ch.uri, TypeURL: e.kind.typ.TypeURL(), Name: e.name, Duration: d, At: tx.clock()}
		tx.hook(func() { f(info) })
	}
}

// watchConnectivity follows the channel's connectivity state: READY starts
// the timers that wait for it, leaving READY stops them, TRANSIENT_FAILURE
// is a server failure (gRFC A57).
func (ch *channel) watchConnectivity() {
	defer ch.c.wg.Done()
	state := ch.cc.GetState()
	ch.onConnectivity(state)
	for {
		if !ch.cc.WaitForStateChange(ch.ctx, state) {
			return
		}
		state = ch.cc.GetState()
		ch.onConnectivity(state)
	}
}

func (ch *channel) onConnectivity(state connectivity.State) {
	c := ch.c
	tx := c.lock()
	defer tx.unlock()
	if c.closed || ch.closed {
		return
	}
	ch.step(tx, health.Event{Kind: health.Connectivity, State: state}, nil)
}

// step applies a health event (gRFC A57) and carries out its effects, in
// this order: the new connectivity state, timers stopped, the event's own
// hook (own, if not nil), timers started, the log line, a server failure
// (ServerFailure, ConnectedChanged, fallback, watchers), or the server
// connected again.
func (ch *channel) step(tx *txn, ev health.Event, own func()) {
	c := ch.c
	var eff health.Effects
	ch.h, eff = health.Step(ch.h, ev)
	if f := c.hooks().ConnectivityChanged; f != nil && eff.ConnectivityChanged {
		info := ConnectivityInfo{Target: c.o.target, Server: ch.uri, State: ch.h.Connectivity}
		tx.hook(func() { f(info) })
	}
	if eff.StopTimers {
		for e := range ch.timed {
			ch.stopTimer(tx, e)
		}
	}
	if own != nil {
		own()
	}
	if eff.StartTimers {
		for e := range c.allEntries() {
			ch.maybeStartTimer(tx, e)
		}
	}
	ch.log(eff.Log, ev)
	if f := c.hooks().ServerFailure; f != nil && eff.ServerFailure {
		info := ServerFailureInfo{Target: c.o.target, Server: ch.uri, Reason: eff.Failure}
		tx.hook(func() { f(info) })
	}
	if f := c.hooks().ConnectedChanged; f != nil && eff.ConnectedChanged {
		info := ConnectedInfo{Target: c.o.target, Server: ch.uri, Connected: ch.h.Connected}
		if !info.Connected {
			info.Reason = ch.h.Failure
		}
		tx.hook(func() { f(info) })
	}
	if eff.Failure != nil {
		ch.fail(tx, eff.Failure, eff.Notify)
	}
}

// log writes the log line of a health event.
func (ch *channel) log(l health.Log, ev health.Event) {
	logger, server, err, backoff := ch.c.logger, ch.uri, xerr.ShownErr(ev.Err), ev.Backoff
	switch l {
	case health.LogKeepalive:
		logger.Warn("xDS server stopped answering keepalive pings", "server", server, "err", err, "backoff", backoff)
	case health.LogResponseTooLarge:
		logger.Error("ADS response too large; reconnecting with backoff", "server", server, "err", err, "backoff", backoff)
	case health.LogRequestTooLarge:
		logger.Error("ADS request too large for the server; reconnecting with backoff", "server", server, "err", err, "backoff", backoff)
	case health.LogEnded:
		logger.Debug("ADS stream ended after a response; reconnecting", "server", server, "err", err, "backoff", backoff)
	case health.LogQuietResume:
		logger.Debug("resumed delta stream ended without a response (nothing had changed); the next stream asks for everything", "server", server, "err", err)
	case health.LogFailed:
		logger.Warn("ADS stream failed before any response", "server", server, "err", err, "backoff", backoff)
	case health.LogFailedAgain:
		logger.Debug("ADS stream failed before any response", "server", server, "err", err, "backoff", backoff)
	}
}

// fail handles a server failure (gRFC A57). For each authority whose
// active server this is, it falls back to the next server when a watched
// resource was never received (gRFC A71); the watchers of an authority that
// falls back hear nothing, since the next server may serve them at once.
// The watchers of the others are told, if notify is set: ambient if the
// resource is held, through ResourceChanged if not. Watchers of authorities
// served by another server hear nothing: a failed retry of a recovering
// primary is no news to them.
func (ch *channel) fail(tx *txn, reason error, notify bool) {
	c := ch.c
	var failing map[*authority]bool // the authorities that could not fall back
	for _, a := range ch.sortedAuths() {
		if a.activeChan() != ch || tx.maybeFallback(a, reason) {
			continue
		}
		if failing == nil {
			failing = map[*authority]bool{}
		}
		failing[a] = true
	}
	if !notify || len(failing) == 0 {
		return
	}
	for e := range c.allEntries() {
		if failing[e.auth] {
			tx.apply(e, event{kind: evUnreachable}, details{cause: unreachableCause(e, reason)})
		}
	}
}

// serverList names the servers of a from the primary to index last.
func serverList(a *authority, last int) string {
	var b strings.Builder
	for i := 0; i <= last && i < len(a.servers); i++ {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%q", a.servers[i].URI)
	}
	return b.String()
}

// sortedAuths returns the authorities using ch in a stable order.
func (ch *channel) sortedAuths() []*authority {
	out := make([]*authority, 0, len(ch.auths))
	for a := range ch.auths {
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// closeChannel stops a channel nothing uses any more, or every
// channel when the client closes; its ClientConn is closed once the lock is
// released. Observers see it go: its stream ends (reason as the error),
// it is no longer connected, and ChannelClosed fires.
func (tx *txn) closeChannel(ch *channel, reason error) {
	c := tx.c
	if ch.closed {
		return
	}
	for e := range ch.timed {
		ch.stopTimer(tx, e)
	}
	if ch.h.Stream != 0 {
		if f := c.hooks().StreamEnded; f != nil {
			info := StreamEndInfo{Target: c.o.target, Server: ch.uri, ResponseReceived: ch.h.Responded, Err: reason}
			tx.hook(func() { f(info) })
		}
		ch.h.Stream = 0
	}
	if ch.h.Connected {
		ch.h.Connected = false
		if f := c.hooks().ConnectedChanged; f != nil {
			info := ConnectedInfo{Target: c.o.target, Server: ch.uri, Reason: reason}
			tx.hook(func() { f(info) })
		}
	}
	ch.closed = true
	if f := c.hooks().ChannelClosed; f != nil {
		info := ChannelInfo{Target: c.o.target, Server: ch.uri, Reason: reason}
		tx.hook(func() { f(info) })
	}
	ch.cancel()
	delete(c.channels, ch.server.Key())
	c.toClose = append(c.toClose, ch)
}

// runStreams keeps one ADS stream open while anything is subscribed,
// backing off between attempts that failed before any response (gRFC A57).
func (ch *channel) runStreams() {
	c := ch.c
	defer c.wg.Done()
	ads := discoveryv3.NewAggregatedDiscoveryServiceClient(ch.cc)
	retries := 0
	for {
		tx := c.lock()
		n := ch.nEntries
		tx.unlock()
		if n == 0 {
			select {
			case <-ch.kick:
				continue
			case <-ch.ctx.Done():
				return
			}
		}
		start := time.Now()
		started, gotResponse, err := ch.runStream(ads)
		if ch.ctx.Err() != nil {
			return
		}
		err = c.explainStreamError(err)
		var delay time.Duration
		if gotResponse && causeOf(err) == health.CauseOther {
			retries = 0
		} else {
			// A response too large to read comes again on the next stream,
			// as does a request too large for the server, and a server
			// that stopped answering pings is failing: back off even if
			// earlier responses were read.
			delay = c.o.backoff(retries)
			retries++
		}
		// Streams start at most once per minStreamInterval: gRFC A57
		// restarts a stream that had a response at once, so a server
		// that ends every stream right after a response would otherwise
		// get new streams as fast as it can end them.
		delay = max(delay, c.o.minStreamInterval-time.Since(start))
		ch.streamEnded(started, gotResponse, err, delay)
		if delay > 0 {
			t := time.NewTimer(delay)
			select {
			case <-t.C:
			case <-ch.ctx.Done():
				t.Stop()
				return
			}
		}
	}
}

// runStream runs one ADS stream until it ends. started is false when the
// stream could not be created.
func (ch *channel) runStream(ads discoveryv3.AggregatedDiscoveryServiceClient) (started, gotResponse bool, err error) {
	c := ch.c
	ctx, cancel := context.WithCancel(ch.ctx)
	defer cancel()
	stream, err := ch.openStream(ctx, ads)
	if err != nil {
		return false, false, err
	}
	tx := c.lock()
	if c.closed || ch.closed {
		tx.unlock()
		return false, false, context.Canceled
	}
	c.streamSeq++
	id := c.streamSeq
	ch.step(tx, health.Event{Kind: health.StreamStarted, Stream: id}, nil)
	for _, ts := range ch.types {
		ts.reset()
	}
	if f := c.hooks().StreamStarted; f != nil {
		info := StreamInfo{Target: c.o.target, Server: ch.uri, Attempt: ch.h.Attempts, Delta: ch.delta}
		tx.hook(func() { f(info) })
	}
	tx.unlock()
	signal(ch.wake)

	sendDone := make(chan struct{})
	go func() {
		defer close(sendDone)
		ch.sendLoop(ctx, stream, id)
	}()
	defer func() {
		cancel()
		<-sendDone
	}()
	for {
		apply, err := stream.receive()
		if err != nil {
			return true, gotResponse, err
		}
		if !gotResponse {
			gotResponse = true
			tx := c.lock()
			if !c.closed && !ch.closed && ch.h.Stream == id {
				ch.step(tx, health.Event{Kind: health.Response}, nil)
			}
			tx.unlock()
		}
		apply(ch, id)
		// Flow control: read on only once watchers have taken this update.
		select {
		case <-c.callbacks.barrier():
		case <-ctx.Done():
			return true, gotResponse, ctx.Err()
		}
	}
}

// streamEnded records the end of a stream (started), or the failure to
// create one (not started): each has its own hook, so that every
// StreamEnded matches a StreamStarted.
func (ch *channel) streamEnded(started, gotResponse bool, err error, delay time.Duration) {
	c := ch.c
	tx := c.lock()
	defer tx.unlock()
	if c.closed || ch.closed {
		return
	}
	ev := health.Event{Kind: health.StreamStartFailed, Err: err, Backoff: delay}
	if started {
		ev = health.Event{Kind: health.StreamEnded, Err: err, Cause: causeOf(err), Backoff: delay}
	}
	ch.step(tx, ev, func() {
		f := c.hooks().StreamEnded
		if !started {
			f = c.hooks().StreamStartFailed
		}
		if f != nil {
			info := StreamEndInfo{Target: c.o.target, Server: ch.uri, ResponseReceived: gotResponse, Err: err, Backoff: delay}
			tx.hook(func() { f(info) })
		}
	})
}

// causeOf classifies how a stream ended, for gRFC A57.
func causeOf(err error) health.Cause {
	switch {
	case errors.Is(err, ErrKeepaliveTimeout):
		return health.CauseKeepalive
	case errors.Is(err, ErrResponseTooLarge):
		return health.CauseResponseTooLarge
	case errors.Is(err, ErrRequestTooLarge):
		return health.CauseRequestTooLarge
	}
	return health.CauseOther
}

// pendingRequest is a request of either protocol ready to send, with what
// its RequestSent hooks report.
type pendingRequest[R any] struct {
	req  R
	info RequestInfo
}

// sendRequests writes reqs on stream id with send, each followed by its
// RequestSent hooks, and stops at the first write that fails.
func sendRequests[R any](ch *channel, id uint64, reqs []pendingRequest[R], send func(R) error) error {
	for _, p := range reqs {
		if err := send(p.req); err != nil {
			return err
		}
		ch.requestSent(id, p.info)
	}
	return nil
}

// errorDetail is the error_detail of a request that NACKs with nack: nil
// for an ACK.
func errorDetail(nack error) *rpcstatus.Status {
	if nack == nil {
		return nil
	}
	// A server's strings in it are valid UTF-8 (protobuf checks), but
	// anything else in an error may not be, and a request that does not
	// marshal would fail the stream.
	return &rpcstatus.Status{Code: int32(codes.InvalidArgument), Message: strings.ToValidUTF8(nack.Error(), "\ufffd")}
}

// firstNode returns the node for the first request of a stream, first set
// until it is taken, and nil for the others.
func (c *Client) firstNode(first *bool) *corev3.Node {
	if !*first {
		return nil
	}
	*first = false
	return c.node
}

// sendAll returns the names of every entry of the type url subscribed on
// ch, and marks those not yet sent on stream id sent, starting their
// timers. The subscriptions count as sent from here (gRFC A57 starts the
// timer once they are): the request is written right after, and if the
// write fails the stream ends and the timers stop. Starting them after the
// write would let a fast answer overtake them. each, if not nil, is called
// for every entry.
func (ch *channel) sendAll(tx *txn, ts *typeState, url string, id uint64, each func(*entry)) []string {
	names := make([]string, 0, ts.n)
	for e := range ch.c.tableOf(url).all() {
		if !e.auth.uses(ch) {
			continue
		}
		names = append(names, e.name)
		if e.sentStream(ch) != id {
			e.markSent(ch, id)
			ch.maybeStartTimer(tx, e)
		}
		if each != nil {
			each(e)
		}
	}
	return names
}

// adsStream is one ADS stream, State of the World or delta.
type adsStream interface {
	// receive reads the next response and returns what applies it to
	// the cache.
	receive() (apply func(ch *channel, id uint64), err error)
	// send writes the requests due on stream id; first is set until the
	// first request, which carries the node, is taken.
	send(ch *channel, id uint64, first *bool) error
}

// openStream opens an ADS stream of the server's protocol.
func (ch *channel) openStream(ctx context.Context, ads discoveryv3.AggregatedDiscoveryServiceClient) (adsStream, error) {
	if ch.delta {
		st, err := ads.DeltaAggregatedResources(ctx)
		return deltaStream{st}, err
	}
	st, err := ads.StreamAggregatedResources(ctx)
	return sotwStream{st}, err
}

// sotwStream is a State of the World ADS stream.
type sotwStream struct {
	st discoveryv3.AggregatedDiscoveryService_StreamAggregatedResourcesClient
}

func (s sotwStream) receive() (func(*channel, uint64), error) {
	resp, err := s.st.Recv()
	if err != nil {
		return nil, err
	}
	return func(ch *channel, id uint64) { ch.handleResponse(id, resp) }, nil
}

// send writes the requests that are due, one per type, each carrying the
// whole current subscription: subscription changes made while a send is
// in flight are coalesced into the next request.
func (s sotwStream) send(ch *channel, id uint64, first *bool) error {
	return sendRequests(ch, id, ch.takeRequests(id, first), s.st.Send)
}

// sendLoop writes the requests that are due whenever wake says some are,
// until the stream ends.
func (ch *channel) sendLoop(ctx context.Context, stream adsStream, id uint64) {
	first := true
	for {
		select {
		case <-ch.wake:
		case <-ctx.Done():
			return
		}
		if err := stream.send(ch, id, &first); err != nil {
			return
		}
	}
}

func (ch *channel) takeRequests(id uint64, first *bool) []pendingRequest[*discoveryv3.DiscoveryRequest] {
	c := ch.c
	tx := c.lock()
	defer tx.unlock()
	if ch.h.Stream != id || c.closed || ch.closed {
		return nil
	}
	var out []pendingRequest[*discoveryv3.DiscoveryRequest]
	for _, url := range c.typeOrder {
		ts := ch.types[url]
		if ts == nil || !ts.dirty || (ts.n == 0 && !ts.sentOnce) {
			continue
		}
		req := &discoveryv3.DiscoveryRequest{
			TypeUrl:       url,
			VersionInfo:   ts.version,
			ResponseNonce: ts.nonce,
			ResourceNames: ch.sendAll(tx, ts, url, id, nil),
			ErrorDetail:   errorDetail(ts.nack),
			Node:          c.firstNode(first),
		}
		out = append(out, pendingRequest[*discoveryv3.DiscoveryRequest]{req: req, info: RequestInfo{TypeURL: url,
			Names: len(req.ResourceNames), Version: req.VersionInfo, Nonce: req.ResponseNonce, NACK: ts.nack}})
		ts.dirty = false
		ts.nack = nil
		ts.sentOnce = true
	}
	return out
}

// requestSent calls the RequestSent hooks for a request written on stream
// id, info completed with the client and the server.
func (ch *channel) requestSent(id uint64, info RequestInfo) {
	c := ch.c
	tx := c.lock()
	defer tx.unlock()
	if ch.h.Stream != id || c.closed {
		return
	}
	info.Target, info.Server, info.Delta = c.o.target, ch.uri, ch.delta
	if f := c.hooks().RequestSent; f != nil {
		tx.hook(func() { f(info) })
	}
}
