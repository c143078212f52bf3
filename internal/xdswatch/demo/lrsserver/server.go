// Package lrsserver is a small LRS server
// (envoy.service.load_stats.v3.LoadReportingService) that records every
// load report it receives. Tests of load reporting talk to it over
// loopback, and the xdswatch demo serves it beside its control plane.
//
// A [Service] answers each stream's first request with the configuration
// in force (load_reporting_interval, clusters or send_all_clusters), sends
// every later [Service.SetConfig] to the open streams, and records the
// node of each stream and each LoadStatsRequest after the first. [Service.Wait]
// waits on what it recorded; nothing sleeps. [Listen] serves a Service on
// an address of its own, to be stopped and started again on the same
// address.
package lrsserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	lrsv3 "github.com/envoyproxy/go-control-plane/envoy/service/load_stats/v3"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
)

// Config is what the server asks clients for.
type Config struct {
	// Interval is load_reporting_interval.
	Interval time.Duration
	// SendAll is send_all_clusters; else Clusters names the clusters.
	SendAll  bool
	Clusters []string
}

func (c Config) response() *lrsv3.LoadStatsResponse {
	return &lrsv3.LoadStatsResponse{
		Clusters:              slices.Clone(c.Clusters),
		SendAllClusters:       c.SendAll,
		LoadReportingInterval: durationpb.New(c.Interval),
	}
}

// Report is one LoadStatsRequest after the first of its stream.
type Report struct {
	// Stream numbers the stream it came on, from 1, in the order streams
	// opened.
	Stream int
	// At is when it arrived.
	At time.Time
	// Stats is its cluster_stats.
	Stats []*endpointv3.ClusterStats
}

// Service is the LRS service. Its methods are safe for concurrent use.
type Service struct {
	lrsv3.UnimplementedLoadReportingServiceServer

	mu      sync.Mutex
	cfg     Config
	nodes   []*corev3.Node // the node of each stream, by stream number - 1
	open    map[int]*serverStream
	reports []Report
	changed chan struct{} // closed and replaced on every change
}

type serverStream struct {
	mu sync.Mutex // serializes Send
	gs lrsv3.LoadReportingService_StreamLoadStatsServer
}

// NewService returns a Service that asks for cfg.
func NewService(cfg Config) *Service {
	return &Service{cfg: cfg, open: map[int]*serverStream{}, changed: make(chan struct{})}
}

// Register registers the service on g.
func (s *Service) Register(g *grpc.Server) { lrsv3.RegisterLoadReportingServiceServer(g, s) }

// notify wakes the waiters. s.mu is held.
func (s *Service) notify() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// StreamLoadStats serves one LRS stream.
func (s *Service) StreamLoadStats(gs lrsv3.LoadReportingService_StreamLoadStatsServer) error {
	first, err := gs.Recv()
	if err != nil {
		return err
	}
	st := &serverStream{gs: gs}
	// The first response goes out before any SetConfig reaches the
	// stream, so the stream's responses are in the order of the configs.
	st.mu.Lock()
	s.mu.Lock()
	s.nodes = append(s.nodes, proto.Clone(first.GetNode()).(*corev3.Node))
	id := len(s.nodes)
	s.open[id] = st
	resp := s.cfg.response()
	s.notify()
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.open, id)
		s.notify()
		s.mu.Unlock()
	}()
	err = gs.Send(resp)
	st.mu.Unlock()
	if err != nil {
		return err
	}
	for {
		req, err := gs.Recv()
		if err != nil {
			return err
		}
		s.mu.Lock()
		s.reports = append(s.reports, Report{Stream: id, At: time.Now(), Stats: req.GetClusterStats()})
		s.notify()
		s.mu.Unlock()
	}
}

func (st *serverStream) send(m *lrsv3.LoadStatsResponse) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.gs.Send(m)
}

// SetConfig changes what the server asks for, and sends it to every open
// stream.
func (s *Service) SetConfig(cfg Config) {
	s.mu.Lock()
	s.cfg = cfg
	streams := make([]*serverStream, 0, len(s.open))
	for _, st := range s.open {
		streams = append(streams, st)
	}
	s.mu.Unlock()
	for _, st := range streams {
		// A stream that has ended fails to send, which is no news.
		_ = st.send(cfg.response())
	}
}

// Reports returns the reports received so far, in order.
func (s *Service) Reports() []Report {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.reports)
}

// Nodes returns the node of every stream opened so far, in order.
func (s *Service) Nodes() []*corev3.Node {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.nodes)
}

// Open returns how many streams are open.
func (s *Service) Open() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.open)
}

// Wait blocks until cond returns true, evaluating it now and after every
// stream or report, and returns ctx's error if ctx ends first. cond runs
// with no lock held and may call the Service's methods.
func (s *Service) Wait(ctx context.Context, cond func() bool) error {
	for {
		s.mu.Lock()
		ch := s.changed
		s.mu.Unlock()
		if cond() {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("lrsserver: %w", context.Cause(ctx))
		}
	}
}

// Server is a Service served on a loopback address.
type Server struct {
	svc  *Service
	addr string

	mu     sync.Mutex
	g      *grpc.Server  // nil while stopped
	served chan struct{} // closed when Serve returns
}

// Listen serves svc on addr ("127.0.0.1:0" picks a port).
func Listen(ctx context.Context, addr string, svc *Service) (*Server, error) {
	var lc net.ListenConfig
	lis, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("lrsserver: listen on %q: %w", addr, err)
	}
	s := &Server{svc: svc, addr: lis.Addr().String()}
	s.serve(lis)
	return s, nil
}

// Addr returns the address the server listens on; it stays the same across
// Stop and Restart.
func (s *Server) Addr() string { return s.addr }

func (s *Server) serve(lis net.Listener) {
	g := grpc.NewServer(grpc.WaitForHandlers(true))
	s.svc.Register(g)
	served := make(chan struct{})
	go func() {
		defer close(served)
		// Serve returns nil after Stop; a broken listener shows up in the
		// client as connection errors.
		_ = g.Serve(lis)
	}()
	s.g, s.served = g, served
}

// Stop closes the listener and every connection at once: clients see
// their streams fail. Every stream handler has returned when it returns.
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.g == nil {
		return
	}
	s.g.Stop()
	<-s.served
	s.g, s.served = nil, nil
}

// Restart serves again on the same address after Stop, retrying the bind
// until ctx ends if the system still holds the address.
func (s *Server) Restart(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.g != nil {
		return errors.New("lrsserver: Restart of a running server")
	}
	var lc net.ListenConfig
	for {
		lis, err := lc.Listen(ctx, "tcp", s.addr)
		if err == nil {
			s.serve(lis)
			return nil
		}
		t := time.NewTimer(10 * time.Millisecond)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("lrsserver: listen again on %s: %w", s.addr, err)
		}
	}
}
