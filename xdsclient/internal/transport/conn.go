package transport

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/status"

	"github.com/xdslens/xdslens/xdsclient/bootstrap"
	"github.com/xdslens/xdslens/xdsclient/internal/health"
	"github.com/xdslens/xdslens/xdsclient/internal/txn"
	"github.com/xdslens/xdslens/xdsclient/internal/xerr"
)

// Config is what a Conn is made with.
type Config struct {
	Server *bootstrap.ServerConfig
	// Delta selects the incremental ADS stream; else State of the World.
	Delta bool
	// Node goes in the first request of every stream.
	Node *corev3.Node
	// KeepaliveTime, KeepaliveTimeout and MaxResponseSize set up the gRPC
	// channel (Dial).
	KeepaliveTime, KeepaliveTimeout time.Duration
	MaxResponseSize                 int
	// Backoff is the delay before retry number retries (from 0) of a
	// stream that failed; MinStreamInterval the shortest time between the
	// starts of two streams.
	Backoff           func(retries int) time.Duration
	MinStreamInterval time.Duration
	// Group, if not nil, counts the Conn's goroutines, so that the client
	// can wait for them when it closes.
	Group *sync.WaitGroup
	// Dial makes the channel to Server; nil is DialGRPC.
	Dial Dialer
}

// Handler is told what happens on a Conn (see the package doc).
type Handler interface {
	// Connectivity: the channel reports s.
	Connectivity(s connectivity.State)
	// StreamStarted: stream id was created. Its requests are built after
	// this returns.
	StreamStarted(id uint64)
	// Requests calls build, unless stream id is no longer current, with
	// the lock that Subscribe and Unsubscribe are called with held: names
	// returns the names of typeURL subscribed on the server, in any order,
	// which a State of the World request subscribes (build does not keep
	// them past the request).
	Requests(id uint64, build func(names func(typeURL string) []string))
	// Versions returns the versions held of the resources of typeURL from
	// this server, by name, for the first delta request of the type on
	// stream id (initial_resource_versions); nil for none.
	Versions(id uint64, typeURL string) map[string]string
	// Sending: a request of typeURL is about to be written on stream id;
	// it subscribes names for the first time on that stream (every name,
	// for the first request of the type on the stream), which the handler
	// must not modify. resumed reports a first delta request that carries
	// versions. A response to it cannot come before Sending returns.
	Sending(id uint64, typeURL string, names []string, resumed bool)
	// Sent: a request was written on stream id.
	Sent(id uint64, r Request)
	// Response: a response was read on stream id. The next is read once
	// the Result's Wait is closed. The Values of u's resources are slices
	// of a buffer the Conn reuses once Response returns: what is kept of
	// them, or decoded from them, must be copied.
	Response(id uint64, u *Update) Result
	// StreamEnded: stream id ended, or (e.Started false, id 0) no stream
	// could be created.
	StreamEnded(id uint64, e End)
}

// Request describes a request written to a stream.
type Request struct {
	TypeURL string
	// Names is how many names the request subscribes to (all of them over
	// State of the World); Unsubscribed how many a delta request
	// unsubscribes.
	Names, Unsubscribed int
	// Version is the version_info of a State of the World request.
	Version, Nonce string
	// NACK is the error_detail of a NACK, nil for an ACK.
	NACK  error
	Delta bool
}

// Result is what the handler made of a response.
type Result struct {
	// Ignored: the response is not acknowledged (a type that is not
	// subscribed).
	Ignored bool
	// Valid counts the valid resources; NACK is the error that rejects
	// the others, nil to ACK. A State of the World version is accepted
	// when some resource was valid, even with a NACK (gRFC A46).
	Valid int
	NACK  error
	// Wait, when not nil, is closed once the response's watchers have taken
	// it: flow control.
	Wait <-chan struct{}
}

// End describes the end of a stream, or the failure to create one.
type End struct {
	Started, Responded bool
	// Err is how the stream ended, with the causes of Cause named.
	Err error
	// Backoff is the wait before the next stream.
	Backoff time.Duration
}

// Conn is the connection to one xDS server.
type Conn struct {
	cfg    Config
	h      Handler
	ch     Channel
	ctx    context.Context
	cancel context.CancelFunc
	wake   chan struct{} // a request is due
	kick   chan struct{} // something is subscribed
	// changes counts the subscriptions and unsubscriptions, which the
	// send loop watches to let a burst of them end (settle).
	changes atomic.Uint64
	// resources holds the resources of a response the handler took
	// (*[]Resource), for the next; the collector empties it.
	resources sync.Pool

	// told orders what the handler hears of the channel's connectivity
	// and of a stream's start: a state is read and told with it held, and
	// so is a start. A stream starts on a READY channel, so a state read
	// before a start (IDLE, CONNECTING) is told before it, never after it,
	// where it would read as the channel leaving READY (gRFC A57: the
	// does-not-exist timers would stop for nothing).
	told sync.Mutex

	// mu is the Conn's own lock, taken after the client's: s is reached
	// only through the Tx it gives.
	mu txn.Mutex
	s  txn.Guarded[subscriptions]
}

// subscriptions is what is subscribed on the server, and the stream.
type subscriptions struct {
	types  []*typeState // in the order of their rank
	n      int          // subscribed names, of every type
	stream uint64       // the current stream, 0 when none
	seq    uint64       // streams started
}

// New dials cfg.Server (cfg.Dial) and starts following its connectivity;
// a stream starts once something is subscribed. The Conn ends when ctx is
// done or Close is called.
func New(ctx context.Context, cfg Config, h Handler) (*Conn, error) {
	dial := cfg.Dial
	if dial == nil {
		dial = DialGRPC
	}
	ch, err := dial(cfg)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	c := &Conn{cfg: cfg, h: h, ch: ch, ctx: ctx, cancel: cancel, wake: make(chan struct{}, 1), kick: make(chan struct{}, 1)}
	c.goroutine(c.watchConnectivity)
	c.goroutine(c.runStreams)
	return c, nil
}

func (c *Conn) goroutine(f func()) {
	if g := c.cfg.Group; g != nil {
		g.Go(f)
		return
	}
	go f()
}

// Server is the server's bootstrap entry.
func (c *Conn) Server() *bootstrap.ServerConfig { return c.cfg.Server }

// Delta reports whether the Conn speaks incremental xDS.
func (c *Conn) Delta() bool { return c.cfg.Delta }

// Close ends the Conn's stream and goroutines and closes its channel. It
// may block while the channel closes: call it with no lock held.
func (c *Conn) Close() {
	c.cancel()
	c.ch.Close()
}

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// watchConnectivity tells the handler of every connectivity state of the
// channel, from the first.
func (c *Conn) watchConnectivity() {
	state := c.tellState()
	for c.ch.WaitForStateChange(c.ctx, state) {
		state = c.tellState()
	}
}

// tellState reads the channel's state and tells the handler, in order
// with the starts of streams (see told).
func (c *Conn) tellState() connectivity.State {
	c.told.Lock()
	defer c.told.Unlock()
	state := c.ch.State()
	c.h.Connectivity(state)
	return state
}

// runStreams keeps one ADS stream open while anything is subscribed,
// backing off between attempts that failed before any response (gRFC A57).
func (c *Conn) runStreams() {
	retries := 0
	for {
		tx := c.mu.Lock()
		n := c.s.Of(tx).n
		tx.Unlock()
		if n == 0 {
			select {
			case <-c.kick:
				continue
			case <-c.ctx.Done():
				return
			}
		}
		start := time.Now()
		id, responded, err := c.runStream()
		if c.ctx.Err() != nil {
			return
		}
		// gRPC's errors may quote the target, or the address it names,
		// with the URI's credentials.
		err = xerr.Redacted(c.explain(err), c.cfg.Server.Redact)
		var delay time.Duration
		if responded && Cause(err) == health.CauseOther {
			retries = 0
		} else {
			// A response too large to read comes again on the next stream,
			// as does a request too large for the server, and a server
			// that stopped answering pings is failing: back off even if
			// earlier responses were read.
			delay = c.cfg.Backoff(retries)
			retries++
		}
		// Streams start at most once per MinStreamInterval: gRFC A57
		// restarts a stream that had a response at once, so a server
		// that ends every stream right after a response would otherwise
		// get new streams as fast as it can end them.
		delay = max(delay, c.cfg.MinStreamInterval-time.Since(start))
		c.h.StreamEnded(id, End{Started: id != 0, Responded: responded, Err: err, Backoff: delay})
		if delay > 0 {
			t := time.NewTimer(delay)
			select {
			case <-t.C:
			case <-c.ctx.Done():
				t.Stop()
				return
			}
		}
	}
}

// runStream runs one ADS stream until it ends; id is 0 when the stream
// could not be created.
func (c *Conn) runStream() (id uint64, responded bool, err error) {
	ctx, cancel := context.WithCancel(c.ctx)
	defer cancel()
	stream, err := c.ch.NewStream(ctx, c.cfg.Delta)
	if err != nil {
		return 0, false, err
	}
	tx := c.mu.Lock()
	st := c.s.Of(tx)
	st.seq++
	id = st.seq
	st.stream = id
	for _, ts := range st.types {
		ts.reset()
	}
	tx.Unlock()
	defer func() {
		tx := c.mu.Lock()
		c.s.Of(tx).stream = 0
		tx.Unlock()
	}()
	c.told.Lock()
	c.h.StreamStarted(id)
	c.told.Unlock()
	signal(c.wake)

	sendDone := make(chan struct{})
	go func() {
		defer close(sendDone)
		c.sendLoop(ctx, stream, id)
	}()
	defer func() {
		cancel()
		<-sendDone
	}()
	for {
		u, err := c.receive(stream)
		if err != nil {
			return id, responded, err
		}
		responded = true
		tx := c.mu.Lock()
		if ts := c.s.Of(tx).typeOf(u.TypeURL); ts != nil {
			u.Known, u.Subscribed = true, ts.n
		}
		tx.Unlock()
		res := c.h.Response(id, u)
		u.release()
		c.acknowledge(id, u, res)
		if res.Wait != nil {
			// Flow control: read on only once watchers have taken this
			// update.
			select {
			case <-res.Wait:
			case <-ctx.Done():
				return id, responded, ctx.Err()
			}
		}
	}
}

// How the send loop lets a burst of subscriptions end (settle): it yields
// settleYields times to see whether more come, then, while they do, waits
// settleStep at a time, up to settleMax in all.
const (
	settleYields = 16
	settleStep   = time.Millisecond
	settleMax    = 20 * time.Millisecond
)

// settle returns, with the count of changes the requests about to be made
// will carry, once the subscriptions stopped changing (yield gives the
// processor up once; step waits settleStep and returns false once the
// stream ended): a caller that
// watches many resources in a row (a fresh client, a callback watching
// every cluster of a route) is then asked for in one request, not in
// many partial ones that a server would each answer with everything
// subscribed so far (and some servers ignore a request sent before the
// answer to the previous one, so that such a request only delays the
// next). Requests that subscribe nothing new (an ACK) are made at once,
// as are those of a single subscription, after a few yields; a burst is
// waited for a millisecond at a time, for at most settleMax, which bounds
// the delay of any request.
func (c *Conn) settle(built uint64, yield func(), step func() bool) uint64 {
	n := c.changes.Load()
	if n == built {
		return n
	}
	for range settleYields {
		yield()
	}
	for waited := time.Duration(0); c.changes.Load() != n && waited < settleMax; waited += settleStep {
		n = c.changes.Load()
		if !step() {
			break
		}
	}
	return c.changes.Load()
}

// acknowledge records what the next request of u's type says of u: the
// nonce, and the version accepted or the NACK.
func (c *Conn) acknowledge(id uint64, u *Update, res Result) {
	if res.Ignored {
		return
	}
	tx := c.mu.Lock()
	defer tx.Unlock()
	st := c.s.Of(tx)
	ts := st.typeOf(u.TypeURL)
	if ts == nil {
		return
	}
	if res.NACK == nil || res.Valid > 0 {
		ts.version = u.Version // gRFC A46: the valid resources are accepted
	}
	if st.stream == id {
		ts.nonce, ts.nack, ts.dirty = u.Nonce, res.NACK, true
		signal(c.wake)
	}
}

// sendLoop writes the requests that are due whenever wake says some are,
// until the stream ends.
func (c *Conn) sendLoop(ctx context.Context, stream Stream, id uint64) {
	first := true
	var built uint64 // changes when the last requests were made
	t := time.NewTimer(settleStep)
	t.Stop()
	defer t.Stop()
	step := func() bool { // waits settleStep, false if the stream ended
		t.Reset(settleStep)
		select {
		case <-t.C:
			return true
		case <-ctx.Done():
			return false
		}
	}
	for {
		select {
		case <-c.wake:
		case <-ctx.Done():
			return
		}
		built = c.settle(built, runtime.Gosched, step)
		for _, r := range c.requests(id, &first) {
			c.h.Sending(id, r.info.TypeURL, r.fresh, r.resumed)
			if err := stream.Send(r.message()); err != nil {
				return
			}
			c.h.Sent(id, r.info)
		}
	}
}

// receive reads the next response of stream, of the Conn's protocol,
// into the resources of an earlier one (c.resources) when they have room.
// The Update holds the stream's bytes until its release.
func (c *Conn) receive(stream Stream) (*Update, error) {
	b, free, err := stream.Recv()
	if err != nil {
		return nil, err
	}
	parse := parseSotW
	if c.cfg.Delta {
		parse = parseDelta
	}
	reuse, _ := c.resources.Get().(*[]Resource)
	if reuse == nil {
		reuse = new([]Resource)
	}
	u, err := parse(b, *reuse)
	if err != nil {
		free()
		c.resources.Put(reuse)
		return nil, status.Errorf(codes.Internal, "xDS stream: %v", err)
	}
	u.free, u.reuse, u.pool = free, reuse, &c.resources
	return u, nil
}
