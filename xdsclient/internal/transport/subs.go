package transport

import (
	"slices"
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	rpcstatus "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
)

// typeState is what is subscribed of one type on the server, and what the
// next request of the type must say (subscriptions.types).
type typeState struct {
	url  string
	rank int
	n    int // names subscribed
	// version is the last version_info accepted (State of the World),
	// kept across streams; nonce the last nonce of the current stream,
	// and nack the error_detail of the request that is due.
	version, nonce string
	nack           error
	dirty          bool // a request is due
	sentOnce       bool // a request of the type went out on this stream

	// State of the World: fresh are the names subscribed since the last
	// request of the type (some may have been unsubscribed since). The
	// names a request subscribes come from the handler (Requests): the
	// subscription is not kept twice.
	fresh []string

	// Delta: sent tells, for each subscribed name, whether its
	// subscription went out on this stream; resync is set until the first
	// request of the type on the stream, which subscribes every name;
	// pending are the names to subscribe in the next request, unsub those
	// to unsubscribe.
	sent    map[string]bool
	resync  bool
	pending []string
	unsub   map[string]struct{}
}

// reset prepares ts for a new stream.
func (ts *typeState) reset() {
	ts.nonce, ts.nack = "", nil
	ts.sentOnce = false
	ts.dirty = ts.n > 0
	ts.fresh = nil
	ts.resync = true
	ts.pending, ts.unsub = nil, nil
	for name := range ts.sent {
		ts.sent[name] = false
	}
}

// typeOf returns the state of typeURL, nil if never subscribed.
func (st *subscriptions) typeOf(url string) *typeState {
	for _, ts := range st.types {
		if ts.url == url {
			return ts
		}
	}
	return nil
}

// Subscribe adds name, of typeURL, to the subscription, which must not
// hold it. Requests of lower rank go first on a new stream.
func (c *Conn) Subscribe(typeURL string, rank int, name string) {
	tx := c.mu.Lock()
	st := c.s.Of(tx)
	ts := st.typeOf(typeURL)
	if ts == nil {
		ts = &typeState{url: typeURL, rank: rank, resync: true}
		i, _ := slices.BinarySearchFunc(st.types, rank, func(t *typeState, r int) int { return t.rank - r })
		st.types = slices.Insert(st.types, i, ts)
	}
	ts.n++
	st.n++
	ts.dirty = true
	c.changes.Add(1)
	// What the next request subscribes anew is kept only while a stream
	// is open and has had a request of the type: the first request of a
	// stream subscribes every name.
	later := st.stream != 0 && ts.sentOnce
	if c.cfg.Delta {
		if ts.sent == nil {
			ts.sent = map[string]bool{}
		}
		ts.sent[name] = false
		if later && !ts.resync {
			ts.pending = append(ts.pending, name)
		}
	} else if later {
		ts.fresh = append(ts.fresh, name)
	}
	tx.Unlock()
	signal(c.kick)
	signal(c.wake)
}

// Unsubscribe removes name, of typeURL, from the subscription.
func (c *Conn) Unsubscribe(typeURL, name string) {
	tx := c.mu.Lock()
	defer tx.Unlock()
	st := c.s.Of(tx)
	ts := st.typeOf(typeURL)
	if ts == nil {
		return
	}
	ts.n--
	st.n--
	ts.dirty = true
	c.changes.Add(1)
	if c.cfg.Delta {
		if ts.sent[name] {
			if ts.unsub == nil {
				ts.unsub = map[string]struct{}{}
			}
			ts.unsub[name] = struct{}{}
		}
		delete(ts.sent, name)
	}
	signal(c.wake)
}

// SentNames returns the names of typeURL whose subscription went out on
// the current stream. Over State of the World they are those of names,
// every name of typeURL subscribed (which the handler holds), not
// subscribed since the last request of the type; over delta, names is not
// read.
func (c *Conn) SentNames(typeURL string, names []string) []string {
	tx := c.mu.Lock()
	defer tx.Unlock()
	st := c.s.Of(tx)
	ts := st.typeOf(typeURL)
	if ts == nil || st.stream == 0 {
		return nil
	}
	var out []string
	if c.cfg.Delta {
		for name, sent := range ts.sent {
			if sent {
				out = append(out, name)
			}
		}
		return out
	}
	if !ts.sentOnce {
		return nil
	}
	if len(ts.fresh) == 0 {
		return names
	}
	waiting := make(map[string]bool, len(ts.fresh))
	for _, name := range ts.fresh {
		waiting[name] = true
	}
	for _, name := range names {
		if !waiting[name] {
			out = append(out, name)
		}
	}
	return out
}

// Types returns the subscribed type URLs, in the order of their rank.
func (c *Conn) Types() []string {
	tx := c.mu.Lock()
	defer tx.Unlock()
	st := c.s.Of(tx)
	out := make([]string, 0, len(st.types))
	for _, ts := range st.types {
		if ts.n > 0 {
			out = append(out, ts.url)
		}
	}
	return out
}

// outgoing is a request ready to be written, with what the handler hears
// of it.
type outgoing struct {
	sotw    *discoveryv3.DiscoveryRequest
	delta   *discoveryv3.DeltaDiscoveryRequest
	info    Request
	fresh   []string // the names it subscribes for the first time on the stream
	resumed bool     // a first delta request carrying versions
}

// requests returns the requests due on stream id, at most one per type,
// in the order of the types' rank. first is set until the first request
// of the stream, which carries the node, is built.
func (c *Conn) requests(id uint64, first *bool) []outgoing {
	var versions map[string]map[string]string
	if c.cfg.Delta {
		// The versions held come from the handler, which must not be
		// called with the Conn's lock held.
		for _, url := range c.resyncs(id) {
			if v := c.h.Versions(id, url); v != nil {
				if versions == nil {
					versions = map[string]map[string]string{}
				}
				versions[url] = v
			}
		}
	}
	var out []outgoing
	// The handler's lock, which Subscribe is called with, is held while
	// the requests are made: the names it gives agree with what the
	// subscriptions here say (the names subscribed since the last request).
	c.h.Requests(id, func(names func(typeURL string) []string) {
		tx := c.mu.Lock()
		defer tx.Unlock()
		st := c.s.Of(tx)
		if st.stream != id {
			return
		}
		for _, ts := range st.types {
			var r outgoing
			var ok bool
			if c.cfg.Delta {
				r, ok = c.deltaRequest(ts, versions[ts.url])
			} else {
				r, ok = ts.sotwRequest(names)
			}
			if !ok {
				continue
			}
			r.info.NACK = ts.nack
			r.info.Delta = c.cfg.Delta
			node := firstNode(c.cfg.Node, first)
			if r.sotw != nil {
				r.sotw.ErrorDetail, r.sotw.Node = errorDetail(ts.nack), node
			} else {
				r.delta.ErrorDetail, r.delta.Node = errorDetail(ts.nack), node
			}
			ts.nack = nil
			ts.sentOnce = true
			out = append(out, r)
		}
	})
	return out
}

// resyncs returns the types whose first delta request on stream id is
// due.
func (c *Conn) resyncs(id uint64) []string {
	tx := c.mu.Lock()
	defer tx.Unlock()
	st := c.s.Of(tx)
	var out []string
	for _, ts := range st.types {
		if st.stream == id && ts.dirty && ts.resync && ts.n > 0 {
			out = append(out, ts.url)
		}
	}
	return out
}

// sotwRequest returns the State of the World request of ts, if one is due:
// every name subscribed (names gives them), the version accepted, the
// nonce. Subscription changes made while a request is in flight are
// coalesced into the next. The names it subscribes for the first time on
// the stream are those subscribed since the last request (all of them in
// the first request): some may have been unsubscribed since, which the
// handler finds no longer subscribed.
func (ts *typeState) sotwRequest(names func(typeURL string) []string) (outgoing, bool) {
	if !ts.dirty || (ts.n == 0 && !ts.sentOnce) {
		return outgoing{}, false
	}
	all := names(ts.url)
	fresh := ts.fresh
	if !ts.sentOnce {
		fresh = all
	}
	req := &discoveryv3.DiscoveryRequest{TypeUrl: ts.url, VersionInfo: ts.version, ResponseNonce: ts.nonce, ResourceNames: all}
	ts.dirty, ts.fresh = false, nil
	return outgoing{sotw: req, fresh: fresh, info: Request{TypeURL: ts.url, Names: len(all), Version: ts.version, Nonce: ts.nonce}}, true
}

// deltaRequest returns the delta request of ts, if one is due: the
// subscriptions and unsubscriptions since the last one, and the ACK or
// NACK of the last response. Its cost is that of what changed, but for
// the first request of a type on a stream, which subscribes everything,
// with versions (those held, of the names subscribed).
func (c *Conn) deltaRequest(ts *typeState, versions map[string]string) (outgoing, bool) {
	if !ts.dirty {
		return outgoing{}, false
	}
	req := &discoveryv3.DeltaDiscoveryRequest{TypeUrl: ts.url, ResponseNonce: ts.nonce}
	var resumed bool
	if ts.resync {
		if ts.n == 0 {
			// Nothing to subscribe: an empty first request would be a
			// wildcard subscription, which the client never makes.
			ts.dirty = false
			return outgoing{}, false
		}
		names := make([]string, 0, len(ts.sent))
		for name := range ts.sent {
			names = append(names, name)
			ts.sent[name] = true
		}
		slices.Sort(names)
		for name, v := range versions {
			if _, ok := ts.sent[name]; ok {
				if req.InitialResourceVersions == nil {
					req.InitialResourceVersions = map[string]string{}
				}
				req.InitialResourceVersions[name] = v
			}
		}
		resumed = len(req.InitialResourceVersions) > 0
		req.ResourceNamesSubscribe = names
		ts.resync, ts.pending = false, nil
	} else {
		// A name whose unsubscription is pending is held back for the
		// next request: in one request the server would apply the
		// unsubscription last, and it would also keep the version it sent
		// before, so the resource would not come again.
		var later []string
		for _, name := range ts.pending {
			sent, ok := ts.sent[name]
			switch {
			case !ok || sent:
			case isIn(ts.unsub, name):
				later = append(later, name)
			default:
				req.ResourceNamesSubscribe = append(req.ResourceNamesSubscribe, name)
				ts.sent[name] = true
			}
		}
		ts.pending = later
		for name := range ts.unsub {
			req.ResourceNamesUnsubscribe = append(req.ResourceNamesUnsubscribe, name)
		}
		slices.Sort(req.ResourceNamesUnsubscribe)
		ts.unsub = nil
		if len(later) > 0 {
			signal(c.wake)
		}
	}
	ts.dirty = len(ts.pending) > 0 // subscriptions left for the next request
	if len(req.ResourceNamesSubscribe)+len(req.ResourceNamesUnsubscribe) == 0 && ts.nonce == "" && ts.nack == nil {
		return outgoing{}, false // nothing changed and nothing to acknowledge
	}
	r := outgoing{delta: req, fresh: req.ResourceNamesSubscribe, resumed: resumed,
		info: Request{TypeURL: ts.url, Names: len(req.ResourceNamesSubscribe), Unsubscribed: len(req.ResourceNamesUnsubscribe), Nonce: ts.nonce}}
	ts.nonce = "" // a nonce is acknowledged once
	return r, true
}

// message is the request as it is written.
func (r *outgoing) message() proto.Message {
	if r.sotw != nil {
		return r.sotw
	}
	return r.delta
}

func isIn(set map[string]struct{}, name string) bool {
	_, ok := set[name]
	return ok
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

// firstNode returns node for the first request of a stream, first set
// until it is taken, and nil for the others.
func firstNode(node *corev3.Node, first *bool) *corev3.Node {
	if !*first {
		return nil
	}
	*first = false
	return node
}
