package perfbench

import (
	"context"
	"net"
	"strconv"
	"sync"
	"testing"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	deltaserver "github.com/envoyproxy/go-control-plane/pkg/server/delta/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdslens/xdslens/internal/xdswatch/demo/controlplane"
)

// linearServer is go-control-plane's delta server over a linear cache of
// clusters: the cache control planes use to serve incremental xDS at
// scale, where an update names the resources that changed instead of
// replacing a snapshot (whose every resource the snapshot cache hashes
// again to find what changed).
type linearServer struct {
	cache *cachev3.LinearCache
	addr  string
}

// startLinear serves delta ADS of the clusters in cache on loopback, with
// obs observing it, until tb ends.
func startLinear(tb testing.TB, obs *observer) *linearServer {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	tb.Cleanup(cancel)
	s := &linearServer{cache: cachev3.NewLinearCache(cdsURL)}
	s.addr = serveADS(tb, deltaOnly{srv: deltaserver.NewServer(ctx, s.cache, obs.callbacks())})
	return s
}

// serveADS serves ads on a loopback port until tb ends, and returns its
// address.
func serveADS(tb testing.TB, ads discoveryv3.AggregatedDiscoveryServiceServer) string {
	tb.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	gs := grpc.NewServer()
	discoveryv3.RegisterAggregatedDiscoveryServiceServer(gs, ads)
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = gs.Serve(lis)
	}()
	tb.Cleanup(func() {
		gs.Stop()
		<-served
	})
	return lis.Addr().String()
}

// update replaces the clusters named in msgs.
func (s *linearServer) update(tb testing.TB, msgs []proto.Message) {
	m := make(map[string]types.Resource, len(msgs))
	for _, r := range msgs {
		m[cachev3.GetResourceName(r)] = r
	}
	if err := s.cache.UpdateResources(m, nil); err != nil {
		tb.Fatal(err)
	}
}

// deltaOnly serves DeltaAggregatedResources alone.
type deltaOnly struct {
	discoveryv3.UnimplementedAggregatedDiscoveryServiceServer
	srv deltaserver.Server
}

func (d deltaOnly) DeltaAggregatedResources(st discoveryv3.AggregatedDiscoveryService_DeltaAggregatedResourcesServer) error {
	return d.srv.DeltaStreamHandler(st, resourcev3.AnyType)
}

// pushServer is an incremental server that does only the work of what
// changed: it keeps the clusters packed, and an update sends the changed
// clusters that the stream subscribes to, with no look at the others.
// Against it, a delta benchmark measures the client's own cost; against
// go-control-plane's caches it also measures their cost, which grows with
// the number of clusters (each request and each update compares every
// subscribed name).
type pushServer struct {
	addr    string
	cb      controlplane.Callbacks
	updates chan []*discoveryv3.Resource

	mu        sync.Mutex
	resources map[string]*discoveryv3.Resource
	version   int
}

// startPush serves delta ADS of the clusters it is given on loopback, with
// obs observing it, until tb ends. It serves one stream at a time.
func startPush(tb testing.TB, obs *observer) *pushServer {
	tb.Helper()
	s := &pushServer{cb: obs.callbacks(), updates: make(chan []*discoveryv3.Resource, 1), resources: map[string]*discoveryv3.Resource{}}
	s.addr = serveADS(tb, s)
	return s
}

// load packs msgs and replaces the clusters of those names, pushing
// nothing.
func (s *pushServer) load(tb testing.TB, msgs []proto.Message) []*discoveryv3.Resource {
	s.mu.Lock()
	s.version++
	v := strconv.Itoa(s.version)
	changed := make([]*discoveryv3.Resource, 0, len(msgs))
	for _, m := range msgs {
		a, err := anypb.New(m)
		if err != nil {
			s.mu.Unlock()
			tb.Fatal(err)
		}
		r := &discoveryv3.Resource{Name: cachev3.GetResourceName(m), Version: v, Resource: a}
		s.resources[r.Name] = r
		changed = append(changed, r)
	}
	s.mu.Unlock()
	return changed
}

// update is load, then a push of the clusters to the stream, which must be
// open.
func (s *pushServer) update(tb testing.TB, msgs []proto.Message) {
	s.updates <- s.load(tb, msgs)
}

// DeltaAggregatedResources sends what a request newly subscribes to, and
// each update's clusters that are subscribed.
func (s *pushServer) DeltaAggregatedResources(st discoveryv3.AggregatedDiscoveryService_DeltaAggregatedResourcesServer) error {
	reqs := make(chan *discoveryv3.DeltaDiscoveryRequest)
	go func() {
		defer close(reqs)
		for {
			req, err := st.Recv()
			if err != nil {
				return
			}
			select {
			case reqs <- req:
			case <-st.Context().Done():
				return
			}
		}
	}()
	subscribed := map[string]bool{}
	nonce := 0
	send := func(rs []*discoveryv3.Resource) error {
		if len(rs) == 0 {
			return nil
		}
		nonce++
		resp := &discoveryv3.DeltaDiscoveryResponse{TypeUrl: cdsURL, Resources: rs, Nonce: strconv.Itoa(nonce)}
		s.cb.OnStreamDeltaResponse(0, nil, resp)
		return st.Send(resp)
	}
	for {
		var out []*discoveryv3.Resource
		select {
		case req, ok := <-reqs:
			if !ok {
				return nil
			}
			_ = s.cb.OnStreamDeltaRequest(0, req)
			s.mu.Lock()
			for _, name := range req.GetResourceNamesSubscribe() {
				subscribed[name] = true
				if r := s.resources[name]; r != nil {
					out = append(out, r)
				}
			}
			s.mu.Unlock()
			for _, name := range req.GetResourceNamesUnsubscribe() {
				delete(subscribed, name)
			}
		case rs := <-s.updates:
			for _, r := range rs {
				if subscribed[r.Name] {
					out = append(out, r)
				}
			}
		}
		if err := send(out); err != nil {
			return err
		}
	}
}

// StreamAggregatedResources is not served.
func (s *pushServer) StreamAggregatedResources(discoveryv3.AggregatedDiscoveryService_StreamAggregatedResourcesServer) error {
	return status.Error(codes.Unimplemented, "this server speaks delta only")
}
