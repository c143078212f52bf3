package xdsclient

import (
	"fmt"
	"time"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"

	"github.com/xdslens/xdslens/xdsclient/bootstrap"
	"github.com/xdslens/xdslens/xdsclient/internal/health"
	"github.com/xdslens/xdslens/xdsclient/internal/xerr"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
)

// Incremental xDS (the DeltaAggregatedResources stream) is a transport:
// what it carries reaches the cache through applyResponse and the one
// transition function, exactly as State of the World responses do. What
// differs is kept here: requests name the subscriptions that changed
// rather than all of them, each resource has its own version, and a
// deletion is a name in removed_resources rather than an absence.

// deltaFor reports whether the client speaks delta to server s.
func (o *options) deltaFor(s *bootstrap.ServerConfig) bool {
	if o.delta != nil {
		return *o.delta
	}
	return s.DeltaXDS
}

// deltaSubs is what a delta sub-stream of one type must still tell the
// server. Guarded by Client.mu.
type deltaSubs struct {
	// resync is set until the first request of the type on the stream: it
	// subscribes every entry, with the versions held
	// (initial_resource_versions), so subs and unsub are not kept.
	resync bool
	// subs are entries subscribed since the last request, in order; an
	// entry may be listed twice, or be gone.
	subs []*entry
	// unsub are names that went out on this stream and are no longer
	// wanted.
	unsub map[string]struct{}
}

// subscribe records that e is to be subscribed.
func (d *deltaSubs) subscribe(e *entry) {
	if !d.resync {
		d.subs = append(d.subs, e)
	}
}

// unsubscribe records that name, subscribed on this stream, is no longer
// wanted.
func (d *deltaSubs) unsubscribe(name string) {
	if d.unsub == nil {
		d.unsub = map[string]struct{}{}
	}
	d.unsub[name] = struct{}{}
}

// deltaStream is an incremental ADS stream.
type deltaStream struct {
	st discoveryv3.AggregatedDiscoveryService_DeltaAggregatedResourcesClient
}

func (s deltaStream) receive() (func(*channel, uint64), error) {
	resp, err := s.st.Recv()
	if err != nil {
		return nil, err
	}
	return func(ch *channel, id uint64) {
		ch.applyResponse(id, &incoming{typeURL: resp.GetTypeUrl(), version: resp.GetSystemVersionInfo(), nonce: resp.GetNonce(),
			delta: resp.GetResources(), errs: resp.GetResourceErrors(), removed: resp.GetRemovedResources(), isDelta: true})
	}, nil
}

func (s deltaStream) send(ch *channel, id uint64, first *bool) error {
	return sendRequests(ch, id, ch.takeDeltaRequests(id, first), s.st.Send)
}

// takeDeltaRequests returns the delta requests due on stream id, at most
// one per type: the subscriptions and unsubscriptions since the last one,
// and the ACK or NACK of the last response. Its cost is that of what
// changed, not of what is subscribed, except for the first request of a
// type on a stream, which subscribes everything.
func (ch *channel) takeDeltaRequests(id uint64, first *bool) []pendingRequest[*discoveryv3.DeltaDiscoveryRequest] {
	c := ch.c
	tx := c.lock()
	defer tx.unlock()
	if ch.h.Stream != id || c.closed || ch.closed {
		return nil
	}
	var out []pendingRequest[*discoveryv3.DeltaDiscoveryRequest]
	for _, url := range c.typeOrder {
		ts := ch.types[url]
		if ts == nil || !ts.dirty {
			continue
		}
		req := &discoveryv3.DeltaDiscoveryRequest{TypeUrl: url, ResponseNonce: ts.nonce}
		if ts.resync {
			if ts.n == 0 {
				// Nothing to subscribe: an empty first request would be a
				// wildcard subscription, which the client never makes.
				ts.dirty = false
				continue
			}
			req.ResourceNamesSubscribe, req.InitialResourceVersions = ch.resubscribe(tx, ts, url, id)
		} else {
			req.ResourceNamesSubscribe = ch.newSubscriptions(tx, ts, id)
			for name := range ts.unsub {
				req.ResourceNamesUnsubscribe = append(req.ResourceNamesUnsubscribe, name)
			}
			ts.unsub = nil
		}
		ts.dirty = ts.dirty && len(ts.subs) > 0 // subscriptions left for the next request
		if len(req.ResourceNamesSubscribe)+len(req.ResourceNamesUnsubscribe) == 0 && ts.nonce == "" && ts.nack == nil {
			continue // nothing changed and nothing to acknowledge
		}
		req.ErrorDetail = errorDetail(ts.nack)
		req.Node = c.firstNode(first)
		out = append(out, pendingRequest[*discoveryv3.DeltaDiscoveryRequest]{req: req, info: RequestInfo{TypeURL: url,
			Names: len(req.ResourceNamesSubscribe), Unsubscribed: len(req.ResourceNamesUnsubscribe), Nonce: req.ResponseNonce, NACK: ts.nack}})
		ts.nack = nil
		ts.nonce = "" // a nonce is acknowledged once
		ts.sentOnce = true
	}
	return out
}

// resubscribe returns every name of the type url subscribed on ch, marked
// sent on stream id, and the versions held of those received from ch. The
// versions are left out after a server failure: the server then sends
// everything again, which shows that it serves again and ends the errors
// its failure caused (gRFC A88), as a State of the World stream would.
func (ch *channel) resubscribe(tx *txn, ts *typeState, url string, id uint64) ([]string, map[string]string) {
	var versions map[string]string
	var each func(*entry)
	if ch.h.SendVersions(id) {
		each = func(e *entry) {
			if r := e.res; r.ok() && r.from.ch == ch {
				if versions == nil {
					versions = map[string]string{}
				}
				versions[e.name] = r.from.version
			}
		}
	}
	names := ch.sendAll(tx, ts, url, id, each)
	ts.resync = false
	ts.subs = nil
	if versions != nil {
		ch.h, _ = health.Step(ch.h, health.Event{Kind: health.Resumed})
	}
	return names, versions
}

// newSubscriptions returns the names subscribed since the last request of
// ts, marked sent on stream id. A name whose unsubscription is pending is
// held back for the next request: in one request the server would apply
// the unsubscription last, and it would also keep the version it sent
// before, so the resource would not come again.
func (ch *channel) newSubscriptions(tx *txn, ts *typeState, id uint64) []string {
	var names []string
	var later []*entry
	for _, e := range ts.subs {
		if e.removed || !e.auth.uses(ch) || e.sentStream(ch) == id {
			continue
		}
		if _, ok := ts.unsub[e.name]; ok {
			later = append(later, e)
			continue
		}
		names = append(names, e.name)
		e.markSent(ch, id)
		ch.maybeStartTimer(tx, e)
	}
	ts.subs = later
	if len(later) > 0 {
		signal(ch.wake)
	}
	return names
}

// unwrapDelta takes one resource of a delta response: its name and version
// as the server gives them, and the resource, checked as unwrap checks
// one. A resource with no body is a heartbeat, which this client, having
// no resource TTLs, skips.
func unwrapDelta(r *discoveryv3.Resource, typ xdsresource.Type, typeURL string) item {
	it := item{raw: r.GetResource(), version: r.GetVersion()}
	if it.raw == nil {
		it.skip = true
		return it
	}
	if typ != nil {
		it.name = canonicalReceived(typ, r.GetName())
	}
	it.check(typ, typeURL)
	return it
}

// heldFor returns the entry of table named as it is before decoding, or
// nil when the name is not known yet.
func heldFor(table *entryTable, it *item) *entry {
	switch {
	case it.rawName != nil:
		return table.getBytes(it.rawName)
	case it.name != "":
		return table.get(it.name) // as a delta response or a wrapper names it
	}
	return nil
}

// forResource returns an update like u with the version of one resource
// of a delta response: u itself when the version is u's.
func (u *update) forResource(version string) *update {
	if u.version == version {
		return u
	}
	return &update{version: version, at: u.at, ch: u.ch}
}

// applyRemovals handles the names a delta response from ch, the response
// gen at system version, gave in removed_resources: each a deletion, of
// any type (transition). Names not subscribed, or served by another
// server, are ignored; a name the response also carries is invalid and
// NACKed. It returns how many entries were removed and invalid updated.
func (tx *txn) applyRemovals(ch *channel, typ xdsresource.Type, names []string, gen uint64, version string, now time.Time, nacks *nackDetail, invalid int) (removed, _ int) {
	table := tx.c.tableOf(typ.TypeURL())
	for _, name := range names {
		e := table.get(canonicalReceived(typ, name))
		switch {
		case e == nil || e.active() != ch:
		case e.seenGen == gen:
			invalid++
			if nacks.room() {
				nacks.add(fmt.Sprintf("%s %q: appears in both resources and removed_resources", xerr.ShortName(typ), name))
			}
		default:
			e.seenGen = gen
			removed++
			tx.applyRemoval(e, version, now)
		}
	}
	return removed, invalid
}
