package xdsserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/xdslens/xdslens/httpfilter"
	"github.com/xdslens/xdslens/internal/certstore"
	"github.com/xdslens/xdslens/internal/hookqueue"
	"github.com/xdslens/xdslens/xdsclient"
)

// Server is an xDS-enabled gRPC server (gRFC A36): a *grpc.Server whose
// listening addresses serve as the control plane's Listeners say. It is
// a grpc.ServiceRegistrar: register services on it as on a grpc.Server,
// before Serve.
type Server struct {
	cfg    config
	grpc   *grpc.Server
	client *xdsclient.Client
	certs  *certstore.Store
	hooks  atomic.Pointer[Hooks]

	// conns are the accepted connections by the address RemoteAddr gives
	// (a pointer made for the connection): gRPC hands it to each RPC in
	// its peer, which is how an RPC finds its connection and chain.
	conns sync.Map // net.Addr -> *serverConn

	mu        sync.Mutex
	listeners map[*listenerState]struct{}
	hookList  []*Hooks
	stopped   bool
	release   func() // releases the xDS client and the certificate store

	bg sync.WaitGroup // goroutines that write GOAWAYs

	// connHooks runs the hooks of connections (accepted, refused,
	// drained, handshake failed, closed) in the order they are reported,
	// off the goroutines gRPC's Stop waits for (Serve's Accept, the
	// transports): a connection hook may stop the server.
	connHooks hookqueue.Queue
}

// New makes an xDS-enabled server whose xDS client is the pool's client
// for xdsclient.ServerTarget ("#server", or WithPoolTarget's), shared with
// the other users of the pool. The bootstrap must have a
// server_listener_resource_name_template.
func New(pool *xdsclient.Pool, opts ...Option) (*Server, error) {
	cfg := newConfig(opts)
	client, releaseClient, err := pool.Get(cfg.poolTarget)
	if err != nil {
		return nil, fmt.Errorf("xdsserver: %w", err)
	}
	bcfg := client.Bootstrap()
	if bcfg.ServerListenerResourceNameTemplate == "" {
		releaseClient()
		return nil, errors.New("xdsserver: the xDS bootstrap has no server_listener_resource_name_template")
	}
	certs, releaseCerts := certstore.For(bcfg)
	s := &Server{
		cfg:       cfg,
		client:    client,
		certs:     certs,
		listeners: map[*listenerState]struct{}{},
	}
	var once sync.Once
	s.release = func() {
		once.Do(func() {
			releaseCerts()
			releaseClient()
		})
	}
	s.hookList = s.cfg.hooks
	s.hooks.Store(compose(s.hookList))
	gopts := append([]grpc.ServerOption{
		grpc.ChainUnaryInterceptor(s.unaryInterceptor),
		grpc.ChainStreamInterceptor(s.streamInterceptor),
	}, s.cfg.grpcOpts...)
	gopts = append(gopts, grpc.Creds(&serverCreds{s: s}))
	s.grpc = grpc.NewServer(gopts...)
	return s, nil
}

// AddHooks adds hooks to a running server; the returned func removes
// them.
func (s *Server) AddHooks(h *Hooks) (remove func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hookList = append(s.hookList, h)
	s.hooks.Store(compose(s.hookList))
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		for i, x := range s.hookList {
			if x == h {
				s.hookList = append(s.hookList[:i:i], s.hookList[i+1:]...)
				break
			}
		}
		s.hooks.Store(compose(s.hookList))
	}
}

// RegisterService registers a service, as grpc.Server.RegisterService
// does.
func (s *Server) RegisterService(desc *grpc.ServiceDesc, impl any) {
	s.grpc.RegisterService(desc, impl)
}

// GetServiceInfo returns the registered services, as
// grpc.Server.GetServiceInfo does.
func (s *Server) GetServiceInfo() map[string]grpc.ServiceInfo { return s.grpc.GetServiceInfo() }

// Serve serves lis, a TCP listener, as the Listener resource named by the
// bootstrap's server_listener_resource_name_template and lis's address
// says, until Stop or GracefulStop, or until lis fails. Until that
// Listener is received and valid, and whenever it is not, connections are
// accepted and closed at once (gRFC A36). Serve closes lis when it
// returns, with a nil error after Stop or GracefulStop.
func (s *Server) Serve(lis net.Listener) error {
	if _, ok := lis.Addr().(*net.TCPAddr); !ok {
		lis.Close()
		return fmt.Errorf("xdsserver: Serve needs a TCP listener, not one on %s %q", lis.Addr().Network(), lis.Addr())
	}
	name, err := s.client.Bootstrap().ServerListenerResourceName(lis.Addr().String())
	if err != nil {
		lis.Close()
		return fmt.Errorf("xdsserver: %w", err)
	}
	ls := newListenerState(s, lis, name)
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		lis.Close()
		return grpc.ErrServerStopped
	}
	s.listeners[ls] = struct{}{}
	s.mu.Unlock()
	if h := s.hooks.Load(); h != nil && h.ServingModeChanged != nil {
		h.ServingModeChanged(ServingModeChange{Address: ls.addr, Listener: ls.name, Mode: ModeStarting})
	}
	ls.start()
	err = s.grpc.Serve(&servingListener{ls: ls})
	ls.close()
	s.mu.Lock()
	delete(s.listeners, ls)
	s.mu.Unlock()
	// The hooks hear that the address serves no more; the serving mode
	// callback is for the Listener's changes alone.
	if h := s.hooks.Load(); h != nil && h.ServingModeChanged != nil {
		why := err
		if why == nil {
			why = ErrStopped
		}
		h.ServingModeChanged(ServingModeChange{Address: ls.addr, Listener: ls.name, Mode: ModeNotServing, Err: why})
	}
	return err
}

// ErrStopped is the cause given to Hooks.ServingModeChanged when Serve
// returns after Stop or GracefulStop.
var ErrStopped = errors.New("xdsserver: the server stopped")

// ServingModes returns the serving mode of each address the server
// serves, sorted by address: none before Serve and after Stop.
func (s *Server) ServingModes() []ServingModeChange {
	s.mu.Lock()
	ls := make([]*listenerState, 0, len(s.listeners))
	for l := range s.listeners {
		ls = append(ls, l)
	}
	s.mu.Unlock()
	out := make([]ServingModeChange, 0, len(ls))
	for _, l := range ls {
		l.mu.Lock()
		out = append(out, ServingModeChange{Address: l.addr, Listener: l.name, Mode: l.mode, Err: l.modeErr})
		l.mu.Unlock()
	}
	slices.SortFunc(out, func(a, b ServingModeChange) int { return strings.Compare(a.Address, b.Address) })
	return out
}

// Stop stops the server at once, as grpc.Server.Stop does: listeners and
// connections are closed, RPCs fail. It releases the server's xDS client
// and certificate providers.
func (s *Server) Stop() {
	s.markStopped()
	s.grpc.Stop()
	s.finish()
}

// GracefulStop stops the server as grpc.Server.GracefulStop does: it stops
// accepting connections, tells the connections to go away, and waits for
// the RPCs in progress. It then releases the server's xDS client and
// certificate providers.
func (s *Server) GracefulStop() {
	s.markStopped()
	s.grpc.GracefulStop()
	s.finish()
}

func (s *Server) markStopped() {
	s.mu.Lock()
	s.stopped = true
	s.mu.Unlock()
}

// finish closes the listeners' watches once gRPC has stopped, and
// releases what New took.
func (s *Server) finish() {
	s.mu.Lock()
	var ls []*listenerState
	for l := range s.listeners {
		ls = append(ls, l)
	}
	s.mu.Unlock()
	for _, l := range ls {
		l.close()
	}
	s.conns.Range(func(_, v any) bool {
		v.(*serverConn).Close()
		return true
	})
	s.bg.Wait()
	// The connection hooks reported so far run before Stop returns, but
	// when one runs at this moment: it may be the one that stops the
	// server, and they run just after.
	s.connHooks.Close()
	s.release()
}

// unaryInterceptor routes a unary RPC and runs its HTTP filters.
func (s *Server) unaryInterceptor(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	ctx, err := s.intercept(ctx, info.FullMethod)
	if err != nil {
		return nil, err
	}
	return handler(ctx, req)
}

// streamInterceptor routes a streaming RPC and runs its HTTP filters.
func (s *Server) streamInterceptor(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	ctx, err := s.intercept(ss.Context(), info.FullMethod)
	if err != nil {
		return err
	}
	if ctx != ss.Context() {
		ss = &contextStream{ServerStream: ss, ctx: ctx}
	}
	return handler(srv, ss)
}

type contextStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (c *contextStream) Context() context.Context { return c.ctx }

var errUnknownConn = status.Error(codes.Unavailable, "xdsserver: the RPC's connection is not one the xDS server accepted")

// intercept finds the route of an RPC by its connection's filter chain
// and runs the route's HTTP filters. It returns the context the handler
// gets, or the error the RPC fails with.
func (s *Server) intercept(ctx context.Context, method string) (context.Context, error) {
	p, ok := peer.FromContext(ctx)
	if !ok {
		return ctx, errUnknownConn
	}
	v, ok := s.conns.Load(p.Addr)
	if !ok {
		return ctx, errUnknownConn
	}
	sc := v.(*serverConn)
	r, err := sc.chain.Load().routes.Load().route(ctx, method)
	if err != nil {
		return ctx, err
	}
	call := httpfilter.ServerCall{Method: method, Conn: sc.info.Load()}
	for _, in := range r.interceptors {
		if ctx, err = in.Intercept(ctx, call); err != nil {
			return ctx, err
		}
	}
	return ctx, nil
}
