package telemetry_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/xdslens/xdslens/internal/testing/xdstest"
	"github.com/xdslens/xdslens/internal/xdswatch/demo/controlplane"
	"github.com/xdslens/xdslens/telemetry"
	"github.com/xdslens/xdslens/xdsclient"
	"github.com/xdslens/xdslens/xdsclient/bootstrap"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
)

// consistencySteps is the number of random events per sequence.
const consistencySteps = 150

// TestResourcesGaugeMatchesCache drives random sequences of gRFC A88
// events through a scripted server and checks, after each, that the
// resources gauge equals, label set for label set, the counts computed
// from a dump of the cache. XDSLENS_SEED replays a sequence.
func TestResourcesGaugeMatchesCache(t *testing.T) {
	t.Parallel()
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("XDSLENS_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("XDSLENS_SEED=%q: %v", s, err)
		}
		seed = v
	}
	t.Logf("seed %d (set XDSLENS_SEED to replay)", seed)
	seen := map[string]bool{}
	for i, features := range [][]string{
		nil,
		{bootstrap.FeatureFailOnDataErrors},
		{bootstrap.FeatureResourceTimerIsTransientError},
		{bootstrap.FeatureFailOnDataErrors, bootstrap.FeatureResourceTimerIsTransientError},
	} {
		name := "default"
		if len(features) > 0 {
			name = strings.Join(features, "+")
		}
		t.Run(name, func(t *testing.T) {
			s := newSequence(t, features, rand.New(rand.NewPCG(seed, uint64(i))))
			for step := range consistencySteps {
				// Each step has its own deadline, as a slow machine may
				// take longer than one over the whole sequence.
				ctx, cancel := context.WithTimeout(context.Background(), xdstest.Timeout)
				s.Ctx = ctx
				what := s.step()
				s.check(fmt.Sprintf("step %d (%s)", step, what))
				cancel()
			}
			for k := range s.seen {
				seen[k] = true
			}
		})
	}
	labels := make([]string, 0, len(seen))
	for k := range seen {
		labels = append(labels, k)
	}
	sort.Strings(labels)
	t.Logf("cache states seen: %s", strings.Join(labels, ", "))
}

// server is what the scripted server holds for one name.
type serverResource int

const (
	absent serverResource = iota
	valid
	invalid
)

type sequence struct {
	*fixture
	rng       *rand.Rand
	st        *xdstest.Stream
	watches   map[string][]func() // by "type/name", oldest first
	server    map[string]serverResource
	variant   map[string]int
	version   int
	responses atomic.Int64
	ended     atomic.Int64
	seen      map[string]bool
	missing   int
}

var (
	cdsNames = []string{"c0", "c1", "c2", "c3"}
	edsNames = []string{"e0", "e1"}
)

func newSequence(t *testing.T, features []string, rng *rand.Rand) *sequence {
	f := newFixture(t, features, xdsclient.WithResourceTimeout(40*time.Millisecond))
	s := &sequence{fixture: f, rng: rng, watches: map[string][]func(){}, server: map[string]serverResource{},
		variant: map[string]int{}, seen: map[string]bool{}}
	t.Cleanup(f.c.AddHooks(&xdsclient.Hooks{
		ResponseReceived: func(xdsclient.ResponseInfo) { s.responses.Add(1); xdstest.Notify() },
		StreamEnded:      func(xdsclient.StreamEndInfo) { s.ended.Add(1); xdstest.Notify() },
	}))
	t.Cleanup(func() {
		for _, ws := range s.watches {
			for _, cancel := range ws {
				cancel()
			}
		}
	})
	// Start with a watch of each type, never cancelled: there is a stream
	// all along (a server whose last watch is cancelled is closed), and the
	// client takes responses of both types (it ignores types never
	// subscribed).
	t.Cleanup(f.c.Watch(xdsresource.ClusterType, "c0", xdsclient.WatcherFuncs{}))
	t.Cleanup(f.c.Watch(xdsresource.EndpointsType, "e0", xdsclient.WatcherFuncs{}))
	s.st = f.NextStream()
	return s
}

func typeOf(name string) xdsresource.Type {
	if strings.HasPrefix(name, "e") {
		return xdsresource.EndpointsType
	}
	return xdsresource.ClusterType
}

func (s *sequence) watchName(typ xdsresource.Type, name string) {
	k := typ.TypeURL() + "/" + name
	s.watches[k] = append(s.watches[k], s.c.Watch(typ, name, xdsclient.WatcherFuncs{}))
}

func (s *sequence) pick(names []string) string { return names[s.rng.IntN(len(names))] }

// step makes one random event happen and waits for the hook that ends it.
func (s *sequence) step() string {
	all := append(append([]string(nil), cdsNames...), edsNames...)
	switch r := s.rng.IntN(100); {
	case r < 15:
		name := s.pick(all)
		s.watchName(typeOf(name), name)
		return "watch " + name
	case r < 25:
		name := s.pick(all)
		k := typeOf(name).TypeURL() + "/" + name
		if ws := s.watches[k]; len(ws) > 0 {
			ws[0]()
			s.watches[k] = ws[1:]
		}
		return "cancel " + name
	case r < 45:
		name := s.pick(all)
		s.server[name] = valid
		s.variant[name]++
		s.respond(typeOf(name), name, nil)
		return "valid update of " + name
	case r < 57:
		name := s.pick(all)
		s.server[name] = invalid
		s.respond(typeOf(name), name, nil)
		return "invalid update of " + name
	case r < 72:
		name := s.pick(all)
		code := []codes.Code{codes.NotFound, codes.PermissionDenied, codes.Unavailable, codes.Internal}[s.rng.IntN(4)]
		s.server[name] = absent
		s.respond(typeOf(name), name, xdstest.ResourceError(name, code, "scripted"))
		return fmt.Sprintf("TP3 %v for %s", code, name)
	case r < 80:
		name := s.pick(cdsNames)
		s.server[name] = absent
		s.respond(xdsresource.ClusterType, name, nil)
		return "deletion of " + name
	case r < 88:
		// A name the server never sends: its timer fires.
		s.missing++
		name := fmt.Sprintf("missing%d", s.missing)
		s.watchName(xdsresource.ClusterType, name)
		if !xdstest.Until(s.Ctx, func() bool {
			for _, e := range s.c.Dump() {
				if e.Name == name {
					return e.State != xdsclient.StateRequested
				}
			}
			return false
		}) {
			s.T.Fatalf("timer of %s never fired", name)
		}
		return "timer expiry of " + name
	case r < 95:
		s.kill()
		return "stream kill after responses"
	default:
		s.kill()
		// The next stream ends before any response: a server failure.
		s.kill()
		return "stream kill before any response"
	}
}

// respond sends what the server holds: for CDS, the full state; for EDS,
// name alone. resErr is added as a TP3 error.
func (s *sequence) respond(typ xdsresource.Type, name string, resErr *discoveryv3.ResourceError) {
	s.version++
	var res []proto.Message
	names := []string{name}
	if typ.FullState() {
		names = cdsNames
	}
	for _, n := range names {
		switch s.server[n] {
		case valid:
			res = append(res, s.resource(typ, n))
		case invalid:
			res = append(res, invalidResource(typ, n))
		}
	}
	resp := response(typ.TypeURL(), strconv.Itoa(s.version), res...)
	if resErr != nil {
		resp.ResourceErrors = append(resp.ResourceErrors, resErr)
	}
	before := s.responses.Load()
	s.Send(s.st, resp)
	if !xdstest.Until(s.Ctx, func() bool { return s.responses.Load() > before }) {
		s.T.Fatalf("response version %d was never applied", s.version)
	}
}

func (s *sequence) resource(typ xdsresource.Type, name string) proto.Message {
	if typ == xdsresource.EndpointsType {
		return controlplane.Endpoints(name, fmt.Sprintf("10.0.0.1:%d", 1000+s.variant[name]))
	}
	c := cluster(name)
	c.ConnectTimeout = durationpb.New(time.Duration(s.variant[name]+1) * time.Second)
	return c
}

func invalidResource(typ xdsresource.Type, name string) proto.Message {
	if typ == xdsresource.EndpointsType {
		e := controlplane.Endpoints(name, "10.0.0.1:80")
		e.Endpoints[0].Locality = nil // a locality is required
		return e
	}
	return xdstest.InvalidCluster(name)
}

// kill ends the current stream and takes the next one.
func (s *sequence) kill() {
	before := s.ended.Load()
	s.st.End(status.Error(codes.Unavailable, "scripted stream kill"))
	if !xdstest.Until(s.Ctx, func() bool { return s.ended.Load() > before }) {
		s.T.Fatal("the client never saw the stream end")
	}
	s.st = s.NextStream()
}

// check waits until the resources gauge equals the counts from Dump. Both
// are read again on every hook event, since timers may fire meanwhile.
func (s *sequence) check(what string) {
	s.T.Helper()
	var gauge, dump map[string]float64
	ok := xdstest.Until(s.Ctx, func() bool {
		gauge = s.series(telemetry.MetricResources)
		dump = dumpCounts(s.c)
		return equal(gauge, dump)
	})
	if !ok {
		s.T.Fatalf("after %s:\n gauge %s\n cache %s", what, show(gauge), show(dump))
	}
	for _, e := range s.c.Dump() {
		s.seen[e.State.MetricLabel(e.Cached)] = true
	}
}

// dumpCounts counts the cache entries of c by the labels of the resources
// gauge.
func dumpCounts(c *xdsclient.Client) map[string]float64 {
	out := map[string]float64{}
	for _, e := range c.Dump() {
		out[lbl(telemetry.KeyTarget, c.Target(), telemetry.KeyAuthority, e.Authority,
			telemetry.KeyCacheState, e.State.MetricLabel(e.Cached),
			telemetry.KeyResourceType, strings.TrimPrefix(e.TypeURL, xdsresource.TypeURLPrefix))]++
	}
	return out
}
