package csds

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime/debug"
	"sort"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	statusv3 "github.com/envoyproxy/go-control-plane/envoy/service/status/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/xdslens/xdslens/xdsclient"
)

// Server is a ClientStatusDiscoveryService server over an xdsclient.Source.
// It is safe for concurrent use; every request reads the clients afresh.
type Server struct {
	clients func() []client
	logger  *slog.Logger
}

var _ statusv3.ClientStatusDiscoveryServiceServer = (*Server)(nil)

// Option configures a Server.
type Option interface{ apply(*Server) }

type optionFunc func(*Server)

func (f optionFunc) apply(s *Server) { f(s) }

// WithLogger sets the logger that reports clients that could not be read
// (default slog.Default()).
func WithLogger(l *slog.Logger) Option {
	return optionFunc(func(s *Server) {
		if l != nil {
			s.logger = l
		}
	})
}

// NewServer returns a server that reports the clients of src, at each
// request: a *xdsclient.Client (exactly one ClientConfig, as grpcdebug
// v1.0.5 requires; ForTarget does the same for one target of a pool), or
// a *xdsclient.Pool (gRFC A71: one ClientConfig per client, scoped by its
// target; a client that the pool closes while a request reads it is still
// reported).
func NewServer(src xdsclient.Source, opts ...Option) *Server { return newServer(clientsOf(src), opts) }

func newServer(clients func() []client, opts []Option) *Server {
	s := &Server{clients: clients, logger: slog.Default()}
	for _, o := range opts {
		o.apply(s)
	}
	return s
}

// Register registers s as the ClientStatusDiscoveryService of r, for
// example a *grpc.Server.
func (s *Server) Register(r grpc.ServiceRegistrar) {
	statusv3.RegisterClientStatusDiscoveryServiceServer(r, s)
}

// FetchClientStatus returns one ClientConfig per client of the source,
// sorted by client_scope. A request with node_matchers gets
// INVALID_ARGUMENT.
func (s *Server) FetchClientStatus(_ context.Context, req *statusv3.ClientStatusRequest) (*statusv3.ClientStatusResponse, error) {
	return s.clientStatus(req)
}

// StreamClientStatus answers every request on the stream with one response,
// as FetchClientStatus would. It returns when the caller closes its side of
// the stream, and ends the stream with INVALID_ARGUMENT at the first
// request with node_matchers.
func (s *Server) StreamClientStatus(stream grpc.BidiStreamingServer[statusv3.ClientStatusRequest, statusv3.ClientStatusResponse]) error {
	for {
		req, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		resp, err := s.clientStatus(req)
		if err != nil {
			return err
		}
		if err := stream.Send(resp); err != nil {
			return err
		}
	}
}

func (s *Server) clientStatus(req *statusv3.ClientStatusRequest) (*statusv3.ClientStatusResponse, error) {
	if n := len(req.GetNodeMatchers()); n > 0 {
		return nil, status.Errorf(codes.InvalidArgument,
			"csds: node_matchers is not supported (the request has %d): this process is a single xDS node and every request gets the status of all its xDS clients; send the request without node_matchers", n)
	}
	var clients []client
	if err := safely(func() { clients = s.clients() }); err != nil {
		s.logger.Error("csds: cannot list the xDS clients", "err", err.err, "stack", err.stack)
		return nil, status.Errorf(codes.Internal, "csds: listing the xDS clients: %v", err.err)
	}
	b := builder{exclude: req.GetExcludeResourceContents()}
	configs := make([]*statusv3.ClientConfig, 0, len(clients))
	for _, c := range clients {
		configs = append(configs, s.clientConfig(&b, c))
	}
	sort.SliceStable(configs, func(i, j int) bool { return configs[i].GetClientScope() < configs[j].GetClientScope() })
	return &statusv3.ClientStatusResponse{Config: configs}, nil
}

// clientConfig reads one client. Whatever fails is logged and leaves the
// fields it would have filled empty; the ClientConfig is returned anyway.
func (s *Server) clientConfig(b *builder, c client) *statusv3.ClientConfig {
	cfg := &statusv3.ClientConfig{}
	fail := func(what string, err *panicError) {
		s.logger.Error("csds: cannot read an xDS client; it is reported without "+what,
			"target", cfg.GetClientScope(), "err", err.err, "stack", err.stack)
	}
	if err := safely(func() { cfg.ClientScope = c.Target() }); err != nil {
		fail("its target", err)
	}
	if err := safely(func() {
		if n := c.Node(); n != nil {
			cfg.Node = proto.Clone(n).(*corev3.Node)
		}
	}); err != nil {
		fail("its node", err)
	}
	if err := safely(func() { cfg.GenericXdsConfigs = b.genericXdsConfigs(c.Dump()) }); err != nil {
		fail("its cache entries", err)
	}
	return cfg
}

// panicError is a recovered panic and the stack where it happened.
type panicError struct {
	err   error
	stack string
}

// safely runs f and turns a panic in it into an error.
func safely(f func()) (perr *panicError) {
	defer func() {
		if r := recover(); r != nil {
			err, ok := r.(error)
			if !ok {
				err = fmt.Errorf("%v", r)
			}
			perr = &panicError{err: fmt.Errorf("panic: %w", err), stack: string(debug.Stack())}
		}
	}()
	f()
	return nil
}
