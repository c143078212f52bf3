package xdsclient_test

// The rows of gRFC A88's table, run over both ADS protocols with the same
// assertions: State of the World and incremental (delta) xDS must feed the
// one state machine alike. A deletion is an absence from a full-state
// response over SotW and a name in removed_resources over delta.

import (
	"slices"
	"testing"
	"time"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/xdslens/xdslens/internal/testing/xdstest"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/controlplane"
	"github.com/xdslens/xdslens/xdsclient"
	"github.com/xdslens/xdslens/xdsclient/bootstrap"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
)

// cdsRequest is what the tests read of a CDS request of either protocol.
type cdsRequest struct {
	nonce   string
	nack    string   // the error_detail message, "" for none
	names   []string // SotW: the subscription; delta: resource_names_subscribe
	unsub   []string // delta: resource_names_unsubscribe
	initial map[string]string
	node    bool
}

// wire is one ADS stream of either protocol, driven by a test.
type wire interface {
	recv() cdsRequest
	// send sends the resources at version (SotW: as the full state; delta:
	// each at that version) and returns the nonce.
	send(version string, res ...proto.Message) string
	// remove deletes name: SotW sends the full state others, delta names it
	// in removed_resources.
	remove(version, name string, others ...proto.Message) string
	sendErrors(version string, errs ...*discoveryv3.ResourceError) string
	end(err error)
	done() <-chan struct{}
}

// protocol makes the fixture and streams of one ADS protocol.
type protocol struct {
	name     string
	features []string
	next     func(f *fixture) wire
}

var protocols = []protocol{
	{"sotw", nil, func(f *fixture) wire { return sotwWire{f, f.NextStream()} }},
	{"delta", []string{bootstrap.FeatureDeltaXDS}, func(f *fixture) wire { return deltaWire{f, f.NextDeltaStream()} }},
}

// forEachProtocol runs test as a subtest per protocol.
func forEachProtocol(t *testing.T, test func(t *testing.T, p protocol)) {
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) { test(t, p) })
	}
}

// fixture returns a client of one scripted server spoken to in p.
func (p protocol) fixture(t *testing.T, features []string, opts ...xdsclient.Option) *fixture {
	return newFixture(t, append(slices.Clone(p.features), features...), opts...)
}

// watch has f's client watch cds name and returns the watcher, the stream
// and the subscription request.
func (p protocol) watch(f *fixture, name string) (*xdstest.Watcher, wire, cdsRequest) {
	f.T.Helper()
	rec := xdstest.NewWatcher()
	f.T.Cleanup(f.c.Watch(xdsresource.ClusterType, name, rec))
	w := p.next(f)
	return rec, w, w.recv()
}

// cached watches cds name and has the server deliver version 1 of it, ACKed.
func (p protocol) cached(f *fixture, name string) (*xdstest.Watcher, wire) {
	f.T.Helper()
	rec, w, _ := p.watch(f, name)
	w.send("1", controlplane.Cluster(name, name))
	rec.Expect(f.T, xdsclient.NotifyResource, 0)
	w.recv()
	return rec, w
}

type sotwWire struct {
	f  *fixture
	st *xdstest.Stream
}

func (w sotwWire) recv() cdsRequest {
	w.f.T.Helper()
	r := w.f.RecvType(w.st, cdsURL)
	return cdsRequest{nonce: r.GetResponseNonce(), nack: r.GetErrorDetail().GetMessage(), names: r.GetResourceNames(), node: r.GetNode() != nil}
}

func (w sotwWire) send(version string, res ...proto.Message) string {
	w.f.T.Helper()
	return w.f.send(w.st, cdsURL, version, res...).GetNonce()
}

func (w sotwWire) remove(version, _ string, others ...proto.Message) string {
	w.f.T.Helper()
	return w.send(version, others...)
}

func (w sotwWire) sendErrors(version string, errs ...*discoveryv3.ResourceError) string {
	w.f.T.Helper()
	return w.f.Send(w.st, xdstest.ErrorResponse(cdsURL, version, errs...)).GetNonce()
}

func (w sotwWire) end(err error)         { w.st.End(err) }
func (w sotwWire) done() <-chan struct{} { return w.st.Done() }

type deltaWire struct {
	f  *fixture
	st *xdstest.DeltaStream
}

func (w deltaWire) recv() cdsRequest {
	w.f.T.Helper()
	r := w.f.RecvDelta(w.st, cdsURL)
	return cdsRequest{nonce: r.GetResponseNonce(), nack: r.GetErrorDetail().GetMessage(), names: r.GetResourceNamesSubscribe(),
		unsub: r.GetResourceNamesUnsubscribe(), initial: r.GetInitialResourceVersions(), node: r.GetNode() != nil}
}

func (w deltaWire) send(version string, res ...proto.Message) string {
	w.f.T.Helper()
	resp := xdstest.DeltaResponse(cdsURL, version)
	for _, r := range res {
		resp.Resources = append(resp.Resources, xdstest.DeltaResource(clusterName(r), version, r))
	}
	return w.f.SendDelta(w.st, resp).GetNonce()
}

func (w deltaWire) remove(version, name string, _ ...proto.Message) string {
	w.f.T.Helper()
	return w.f.SendDelta(w.st, xdstest.DeltaRemoval(cdsURL, version, name)).GetNonce()
}

func (w deltaWire) sendErrors(version string, errs ...*discoveryv3.ResourceError) string {
	w.f.T.Helper()
	resp := xdstest.DeltaResponse(cdsURL, version)
	resp.ResourceErrors = errs
	return w.f.SendDelta(w.st, resp).GetNonce()
}

func (w deltaWire) end(err error)         { w.st.End(err) }
func (w deltaWire) done() <-chan struct{} { return w.st.Done() }

// clusterName returns the name of a Cluster message.
func clusterName(m proto.Message) string {
	if c, ok := m.(interface{ GetName() string }); ok {
		return c.GetName()
	}
	return ""
}

// Rows 3 and 4: a stream that fails before any response is a server
// failure, whatever the protocol; one that fails after a response is not.
func TestProtocolsStreamFailure(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, p protocol) {
		f := p.fixture(t, nil)
		rec, w, _ := p.watch(f, "c1")
		w.end(errUnavailable("killed before a response"))
		e := rec.Expect(t, xdsclient.NotifyResourceError, codes.Unavailable)
		if !contains(e.Err, "killed before a response") {
			t.Errorf("error %v does not carry the stream's status", e.Err)
		}
		w2 := p.next(f)
		w2.recv()
		w2.send("1", controlplane.Cluster("c1", "c1"))
		rec.Expect(t, xdsclient.NotifyResource, 0)
		w2.recv()
		w2.end(errUnavailable("killed after a response"))
		w3 := p.next(f)
		w3.recv()
		if p.name == "delta" {
			// Resumed with the versions held, the stream may rightly get
			// nothing: its quiet end is no failure, and the next stream
			// asks for everything.
			w3.end(errUnavailable("ended with nothing new"))
			w3 = p.next(f)
			w3.recv()
			drain(t, f.c)
			rec.ExpectNone(t)
		}
		w3.end(errUnavailable("killed again before a response"))
		e = rec.Expect(t, xdsclient.NotifyAmbientError, codes.Unavailable)
		if !contains(e.Err, "killed again before a response") {
			t.Errorf("ambient error %v does not carry the stream's status", e.Err)
		}
		f.checkEntry(cdsURL, "c1", xdsclient.StateACKed, true)
		// The server serves again: the error is over.
		w4 := p.next(f)
		w4.recv()
		w4.send("1", controlplane.Cluster("c1", "c1"))
		expectCleared(t, rec)
	})
}

// Rows 5-7: NACKs.
func TestProtocolsNACK(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, p protocol) {
		t.Run("uncached", func(t *testing.T) {
			f := p.fixture(t, nil)
			rec, w, _ := p.watch(f, "c1")
			nonce := w.send("1", xdstest.InvalidCluster("c1"))
			e := rec.Expect(t, xdsclient.NotifyResourceError, codes.InvalidArgument)
			checkNames(t, e.Err, "c1", f.Srv.Addr())
			nack := w.recv()
			if nack.nonce != nonce || !contains(errString(nack.nack), `"c1"`) {
				t.Errorf("NACK nonce %q error %q, want nonce %q and an error naming c1", nack.nonce, nack.nack, nonce)
			}
			s := f.checkEntry(cdsURL, "c1", xdsclient.StateNACKed, false)
			if s.FailedVersion != "1" {
				t.Errorf("failed version %q, want 1", s.FailedVersion)
			}
		})
		t.Run("cached", func(t *testing.T) {
			f := p.fixture(t, nil)
			rec, w := p.cached(f, "c1")
			w.send("2", xdstest.InvalidCluster("c1"))
			rec.Expect(t, xdsclient.NotifyAmbientError, codes.InvalidArgument)
			if nack := w.recv(); nack.nack == "" {
				t.Error("no NACK")
			}
			s := f.checkEntry(cdsURL, "c1", xdsclient.StateNACKed, true)
			if s.Version != "1" || s.FailedVersion != "2" {
				t.Errorf("entry version %q failed %q, want 1 and 2", s.Version, s.FailedVersion)
			}
		})
		t.Run("cached fail_on_data_errors", func(t *testing.T) {
			f := p.fixture(t, []string{bootstrap.FeatureFailOnDataErrors})
			rec, w := p.cached(f, "c1")
			w.send("2", xdstest.InvalidCluster("c1"))
			rec.Expect(t, xdsclient.NotifyResourceError, codes.InvalidArgument)
			f.checkEntry(cdsURL, "c1", xdsclient.StateNACKed, false)
		})
	})
}

// Row 8: the does-not-exist timer.
func TestProtocolsResourceTimeout(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, p protocol) {
		f := p.fixture(t, nil, xdsclient.WithResourceTimeout(50*time.Millisecond))
		rec, _, _ := p.watch(f, "c1") // the server stays silent
		e := rec.Expect(t, xdsclient.NotifyResourceError, codes.NotFound)
		checkNames(t, e.Err, "c1", f.Srv.Addr())
		f.checkEntry(cdsURL, "c1", xdsclient.StateDoesNotExist, false)
	})
}

// Rows 9 and 10: deletion of a cached resource, then its return.
func TestProtocolsDeletion(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, p protocol) {
		t.Run("cached", func(t *testing.T) {
			f := p.fixture(t, nil)
			rec, w := p.cached(f, "c1")
			w.remove("2", "c1")
			e := rec.Expect(t, xdsclient.NotifyAmbientError, codes.NotFound)
			checkNames(t, e.Err, "c1", f.Srv.Addr())
			f.checkEntry(cdsURL, "c1", xdsclient.StateDoesNotExist, true)
			if ack := w.recv(); ack.nack != "" {
				t.Errorf("a deletion was NACKed: %s", ack.nack)
			}
			w.send("3", controlplane.Cluster("c1", "c1"))
			expectCleared(t, rec)
			f.checkEntry(cdsURL, "c1", xdsclient.StateACKed, true)
		})
		t.Run("cached fail_on_data_errors", func(t *testing.T) {
			f := p.fixture(t, []string{bootstrap.FeatureFailOnDataErrors})
			rec, w := p.cached(f, "c1")
			w.remove("2", "c1")
			rec.Expect(t, xdsclient.NotifyResourceError, codes.NotFound)
			f.checkEntry(cdsURL, "c1", xdsclient.StateDoesNotExist, false)
		})
	})
}

// Rows 11-15: TP3 errors, handled alike by both protocols.
func TestProtocolsTP3(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, p protocol) {
		for _, tc := range []struct {
			name   string
			code   codes.Code
			cached bool
			want   xdsclient.NotificationKind
		}{
			{"NOT_FOUND uncached", codes.NotFound, false, xdsclient.NotifyResourceError},
			{"NOT_FOUND cached", codes.NotFound, true, xdsclient.NotifyAmbientError},
			{"UNAVAILABLE cached", codes.Unavailable, true, xdsclient.NotifyAmbientError},
		} {
			t.Run(tc.name, func(t *testing.T) {
				f := p.fixture(t, nil, xdsclient.WithResourceTimeout(time.Hour))
				var rec *xdstest.Watcher
				var w wire
				if tc.cached {
					rec, w = p.cached(f, "c1")
				} else {
					rec, w, _ = p.watch(f, "c1")
				}
				nonce := w.sendErrors("2", xdstest.ResourceError("c1", tc.code, "scripted TP3 error"))
				e := rec.Expect(t, tc.want, tc.code)
				if !contains(e.Err, "scripted TP3 error") {
					t.Errorf("error %v does not carry the server's message", e.Err)
				}
				f.checkEntry(cdsURL, "c1", xdsclient.StateReceivedError, tc.cached)
				if ack := w.recv(); ack.nack != "" || ack.nonce != nonce {
					t.Errorf("after a TP3 error: nonce %q error %q, want an ACK of %q", ack.nonce, ack.nack, nonce)
				}
			})
		}
	})
}

func errString(s string) error {
	if s == "" {
		return nil
	}
	return status.Error(codes.InvalidArgument, s)
}
