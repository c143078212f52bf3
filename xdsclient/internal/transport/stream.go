package transport

import (
	"context"
	"sync"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"

	"github.com/xdslens/xdslens/xdsclient/internal/xdstp"
	"github.com/xdslens/xdslens/xdsclient/internal/xerr"
)

// Update is one response of either protocol, as the cache takes it.
//
// The strings a server sends that a message may quote are bounded here,
// where they enter the client, once: a version, whole for the requests
// that echo it, comes with ShownVersion, the same cut at xerr.MaxShown
// bytes; a TP3 error's message is cut likewise.
type Update struct {
	TypeURL string
	// Version is the response's version_info; over delta, its
	// system_version_info. ShownVersion is it as a message quotes it.
	Version, ShownVersion string
	Nonce                 string
	// Resources are the response's resources, in order; a delta
	// heartbeat, which carries none, is left out.
	Resources []Resource
	// Errors are the TP3 resource_errors.
	Errors []ResourceError
	// Removed are the names of a delta response's removed_resources.
	Removed []string
	// Delta reports a delta response: each resource has its own version,
	// and a deletion is a name in Removed rather than an absence.
	Delta bool
	// Known reports whether anything of the type was ever subscribed on
	// the server (a response of another type is not acknowledged), and
	// Subscribed how many names of it are now.
	Known      bool
	Subscribed int

	// buf holds the bytes the resources are slices of, given back to
	// gRPC's pool by release, and Resources go back to pool (in reuse)
	// for the next response.
	buf   mem.Buffer
	reuse *[]Resource
	pool  *sync.Pool
}

// release gives back the buffer the resources of u are slices of, and
// the resources themselves: once the handler has taken u
// (Handler.Response), which copies what it keeps.
func (u *Update) release() {
	if u.buf != nil {
		u.buf.Free()
		u.buf = nil
	}
	if u.reuse != nil {
		clear(u.Resources)
		*u.reuse = u.Resources[:0]
		u.pool.Put(u.reuse)
		u.Resources, u.reuse = nil, nil
	}
}

// ResourceError is one TP3 error of an Update: the resource's name ("" if
// the server gave none) and the status the server sent for it: its code
// (OK if it sent none) and its message, cut at xerr.MaxShown bytes.
type ResourceError struct {
	Name    string
	Code    codes.Code
	Message string
}

// Resource is one resource of an Update.
type Resource struct {
	// Name is the name a Resource wrapper or a delta response gives it, ""
	// when only its body names it.
	Name string
	// Version is its own version (delta), "" over State of the World;
	// ShownVersion is it as a message quotes it.
	Version, ShownVersion string
	// Value is the resource, the value of an Any of the Update's type: a
	// slice of the message received, which must be copied to be kept. Nil
	// when Err is set.
	Value []byte
	// Err says why the resource could not be taken from the response: a
	// wrapper that does not unmarshal, a resource of another type.
	Err error
}

// ResourceWrapperURL is the type URL of envoy.service.discovery.v3.Resource,
// which may wrap a resource of a State of the World response.
const ResourceWrapperURL = "type.googleapis.com/envoy.service.discovery.v3.Resource"

// The names of an Update are in canonical form (package xdstp), as the
// client's subscriptions are.
func resourceErrors(errs []*discoveryv3.ResourceError) []ResourceError {
	if len(errs) == 0 {
		return nil
	}
	out := make([]ResourceError, len(errs))
	for i, re := range errs {
		st := re.GetErrorDetail()
		out[i] = ResourceError{Name: xdstp.Received(re.GetResourceName().GetName()), Code: codes.Code(st.GetCode()), Message: xerr.Bound(st.GetMessage())}
	}
	return out
}

// adsStream is one ADS stream, State of the World or delta.
type adsStream interface {
	receive() (*Update, error)
	send(r outgoing) error
}

// The ADS methods, and what a stream of each is.
var (
	sotwDesc  = &grpc.StreamDesc{StreamName: "StreamAggregatedResources", ServerStreams: true, ClientStreams: true}
	deltaDesc = &grpc.StreamDesc{StreamName: "DeltaAggregatedResources", ServerStreams: true, ClientStreams: true}
)

const (
	sotwMethod  = "/envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources"
	deltaMethod = "/envoy.service.discovery.v3.AggregatedDiscoveryService/DeltaAggregatedResources"
)

// open opens an ADS stream of the server's protocol, with the Conn's codec.
func (c *Conn) open(ctx context.Context) (adsStream, error) {
	if c.cfg.Delta {
		st, err := c.cc.NewStream(ctx, deltaDesc, deltaMethod, grpc.ForceCodecV2(codec{}))
		return grpcStream{st, parseDelta, &c.resources}, err
	}
	st, err := c.cc.NewStream(ctx, sotwDesc, sotwMethod, grpc.ForceCodecV2(codec{}))
	return grpcStream{st, parseSotW, &c.resources}, err
}

// grpcStream is an ADS stream of either protocol: parse reads its
// responses, into the resources of an earlier one (from resources) when
// they have room.
type grpcStream struct {
	st        grpc.ClientStream
	parse     func(b []byte, reuse []Resource) (*Update, error)
	resources *sync.Pool // of *[]Resource
}

func (s grpcStream) receive() (*Update, error) {
	var f frame
	if err := s.st.RecvMsg(&f); err != nil {
		return nil, err
	}
	reuse, _ := s.resources.Get().(*[]Resource)
	if reuse == nil {
		reuse = new([]Resource)
	}
	u, err := s.parse(f.buf.ReadOnlyData(), *reuse)
	if err != nil {
		f.buf.Free()
		return nil, status.Errorf(codes.Internal, "xDS stream: %v", err)
	}
	u.buf, u.reuse, u.pool = f.buf, reuse, s.resources
	return u, nil
}

func (s grpcStream) send(r outgoing) error {
	if r.sotw != nil {
		return s.st.SendMsg(r.sotw)
	}
	return s.st.SendMsg(r.delta)
}
