package controlplane

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	serverconfig "github.com/envoyproxy/go-control-plane/pkg/server/config"
	"github.com/envoyproxy/go-control-plane/pkg/server/delta/v3"
	"github.com/envoyproxy/go-control-plane/pkg/server/sotw/v3"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
)

// gracePeriod bounds how long Stop lets streams end with status OK before
// it closes the connections under them.
const gracePeriod = 2 * time.Second

// Server is a go-control-plane management server that serves State of the
// World and delta ADS from a snapshot cache. The cache is not in ADS mode,
// so a client may subscribe to any subset of the resources, and State of the
// World responses on one stream are sent in the order the cache produced
// them. Its methods are safe for concurrent use.
type Server struct {
	cfg    config
	cache  cachev3.SnapshotCache
	grpc   *grpc.Server
	lis    net.Listener
	cancel context.CancelFunc
	served chan struct{} // closed when grpc.Server.Serve returns

	stopOnce sync.Once

	mu          sync.Mutex
	defaultSnap *cachev3.Snapshot   // set by SetResources("") with WithDefaultNode
	own         map[string]struct{} // node IDs that have a configuration of their own
	seen        map[string]struct{} // node IDs that sent a request
}

// Start listens on addr (for example "127.0.0.1:0") and serves ADS until
// [Server.Stop]. ctx bounds the start-up only. Until the first
// SetResources call for a node, that node's requests wait unanswered.
func Start(ctx context.Context, addr string, opts ...Option) (*Server, error) {
	var cfg config
	for _, o := range opts {
		o.apply(&cfg)
	}
	var lc net.ListenConfig
	lis, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("controlplane: listen on %q: %w", addr, err)
	}

	srvCtx, cancel := context.WithCancel(context.Background())
	s := &Server{
		cfg:    cfg,
		lis:    lis,
		cancel: cancel,
		served: make(chan struct{}),
		own:    make(map[string]struct{}),
		seen:   make(map[string]struct{}),
	}
	s.cache = cachev3.NewSnapshotCache(false, cachev3.IDHash{}, cfg.logger)
	cb := serverCallbacks{s: s, user: cfg.callbacks}

	var xdsOpts []serverconfig.XDSOption
	if cfg.logger != nil {
		xdsOpts = append(xdsOpts, sotw.WithLogger(cfg.logger))
	}
	ads := &adsService{
		sotw:  sotw.NewServer(srvCtx, s.cache, cb, append(xdsOpts, sotw.WithOrderedADS())...),
		delta: delta.NewServer(srvCtx, s.cache, cb, xdsOpts...),
	}
	s.grpc = grpc.NewServer(cfg.grpcOpts...)
	discoveryv3.RegisterAggregatedDiscoveryServiceServer(s.grpc, ads)
	for _, register := range cfg.services {
		register(s.grpc)
	}

	go func() {
		defer close(s.served)
		// Serve returns nil after Stop or GracefulStop; any other error
		// means the listener failed, and clients will see it as
		// connection errors.
		_ = s.grpc.Serve(lis)
	}()
	return s, nil
}

// Addr returns the address the server listens on, as "ip:port".
func (s *Server) Addr() string { return s.lis.Addr().String() }

// SetResources replaces the whole configuration of node nodeID with
// resources, as one snapshot whose every type has the given version. Types
// are recognized from the messages themselves (Listener,
// RouteConfiguration, Cluster, ClusterLoadAssignment and the other types
// go-control-plane knows); the four gRPC types are always present, so a
// type with no resources is served as an empty response at that version,
// which tells a client that the resources it asked for do not exist.
//
// Open watches whose version differs are answered at once. Calling it again
// with the same version changes the stored snapshot but pushes nothing to
// clients that already acknowledged that version.
//
// With [WithDefaultNode], an empty nodeID sets the configuration of every
// node that has none of its own.
func (s *Server) SetResources(ctx context.Context, nodeID, version string, resources ...proto.Message) error {
	snap, err := newSnapshot(version, resources)
	if err != nil {
		return fmt.Errorf("controlplane: node %q version %q: %w", nodeID, version, err)
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.cfg.defaultNode || nodeID != "" {
		s.own[nodeID] = struct{}{}
		if err := s.cache.SetSnapshot(ctx, nodeID, snap); err != nil {
			return fmt.Errorf("controlplane: node %q version %q: %w", nodeID, version, err)
		}
		return nil
	}

	s.defaultSnap = snap
	var errs []error
	for id := range s.seen {
		if _, ok := s.own[id]; !ok {
			errs = append(errs, s.cache.SetSnapshot(ctx, id, snap))
		}
	}
	if _, ok := s.seen[""]; !ok {
		errs = append(errs, s.cache.SetSnapshot(ctx, "", snap))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("controlplane: default configuration version %q: %w", version, err)
	}
	return nil
}

// sawNode gives a node seen for the first time the default configuration,
// before go-control-plane opens a watch for its request.
func (s *Server) sawNode(id string) {
	if !s.cfg.defaultNode {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.seen[id]; ok {
		return
	}
	s.seen[id] = struct{}{}
	if _, ok := s.own[id]; ok || s.defaultSnap == nil || id == "" {
		return
	}
	// No watch of this node exists yet, so this only stores the snapshot.
	_ = s.cache.SetSnapshot(context.Background(), id, s.defaultSnap)
}

// Stop ends every stream with status OK, closes the listener and returns
// once the server's goroutines have finished. Streams that do not end
// within a short grace period have their connections closed. Stop may be
// called more than once.
func (s *Server) Stop() {
	s.stopOnce.Do(func() {
		// Cancelling the server context makes go-control-plane return
		// from every stream handler; GracefulStop then only has to
		// wait for those returns.
		s.cancel()
		graceful := make(chan struct{})
		go func() {
			defer close(graceful)
			s.grpc.GracefulStop()
		}()
		timer := time.NewTimer(gracePeriod)
		defer timer.Stop()
		select {
		case <-graceful:
		case <-timer.C:
			s.grpc.Stop()
			<-graceful
		}
		<-s.served
	})
}

// newSnapshot groups resources by type URL into one snapshot.
func newSnapshot(version string, resources []proto.Message) (*cachev3.Snapshot, error) {
	byType := map[resourcev3.Type][]types.Resource{
		resourcev3.ListenerType: nil,
		resourcev3.RouteType:    nil,
		resourcev3.ClusterType:  nil,
		resourcev3.EndpointType: nil,
	}
	names := make(map[string]struct{})
	for i, r := range resources {
		if r == nil {
			return nil, fmt.Errorf("resources[%d] is nil", i)
		}
		typeURL := resourcev3.APITypePrefix + string(proto.MessageName(r))
		name := cachev3.GetResourceName(r)
		key := typeURL + "\x00" + name
		if _, dup := names[key]; dup {
			return nil, fmt.Errorf("resources[%d]: %s %q appears twice", i, proto.MessageName(r), name)
		}
		names[key] = struct{}{}
		byType[typeURL] = append(byType[typeURL], r)
	}
	return cachev3.NewSnapshot(version, byType)
}

// adsService joins go-control-plane's State of the World and delta
// handlers into the ADS gRPC service.
type adsService struct {
	discoveryv3.UnimplementedAggregatedDiscoveryServiceServer
	sotw  sotw.Server
	delta delta.Server
}

func (a *adsService) StreamAggregatedResources(st discoveryv3.AggregatedDiscoveryService_StreamAggregatedResourcesServer) error {
	return a.sotw.StreamHandler(st, resourcev3.AnyType)
}

func (a *adsService) DeltaAggregatedResources(st discoveryv3.AggregatedDiscoveryService_DeltaAggregatedResourcesServer) error {
	return a.delta.DeltaStreamHandler(st, resourcev3.AnyType)
}
