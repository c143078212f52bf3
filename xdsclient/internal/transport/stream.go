package transport

import (
	"context"
	"fmt"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	rpcstatus "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdslens/xdslens/xdsclient/internal/xdstp"
)

// Update is one response of either protocol, as the cache takes it.
type Update struct {
	TypeURL string
	// Version is the response's version_info; over delta, its
	// system_version_info.
	Version string
	Nonce   string
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
}

// ResourceError is one TP3 error of an Update: the resource's name ("" if
// the server gave none) and the status the server sent for it (nil if it
// sent none).
type ResourceError struct {
	Name   string
	Status *rpcstatus.Status
}

// Resource is one resource of an Update.
type Resource struct {
	// Name is the name a Resource wrapper or a delta response gives it, ""
	// when only its body names it.
	Name string
	// Version is its own version (delta), "" over State of the World.
	Version string
	// Any is the resource, of the Update's type; nil when Err is set.
	Any *anypb.Any
	// Err says why the resource could not be taken from the response: a
	// wrapper that does not unmarshal, a resource of another type.
	Err error
}

// ResourceWrapperURL is the type URL of envoy.service.discovery.v3.Resource,
// which may wrap a resource of a State of the World response.
const ResourceWrapperURL = "type.googleapis.com/envoy.service.discovery.v3.Resource"

// The names of an Update are in canonical form (package xdstp), as the
// client's subscriptions are.

// FromSotW returns the Update of a State of the World response.
func FromSotW(resp *discoveryv3.DiscoveryResponse) *Update {
	u := &Update{TypeURL: resp.GetTypeUrl(), Version: resp.GetVersionInfo(), Nonce: resp.GetNonce(), Errors: resourceErrors(resp.GetResourceErrors()),
		Resources: make([]Resource, len(resp.GetResources()))}
	for i, a := range resp.GetResources() {
		u.Resources[i] = unwrap(a, u.TypeURL)
	}
	return u
}

func resourceErrors(errs []*discoveryv3.ResourceError) []ResourceError {
	if len(errs) == 0 {
		return nil
	}
	out := make([]ResourceError, len(errs))
	for i, re := range errs {
		out[i] = ResourceError{Name: xdstp.Received(re.GetResourceName().GetName()), Status: re.GetErrorDetail()}
	}
	return out
}

// unwrap takes one resource of a State of the World response, unwrapping
// an envoy.service.discovery.v3.Resource.
func unwrap(a *anypb.Any, typeURL string) Resource {
	r := Resource{Any: a}
	if a.GetTypeUrl() == ResourceWrapperURL {
		w := &discoveryv3.Resource{}
		if err := proto.Unmarshal(a.GetValue(), w); err != nil {
			return Resource{Err: fmt.Errorf("cannot unmarshal %s: %v", ResourceWrapperURL, err)}
		}
		if w.GetResource() == nil {
			return Resource{Name: w.GetName(), Err: fmt.Errorf("resource wrapper %q carries no resource", w.GetName())}
		}
		r = Resource{Name: xdstp.Received(w.GetName()), Any: w.GetResource()}
	}
	return r.check(typeURL)
}

// check checks that r is of the response's type.
func (r Resource) check(typeURL string) Resource {
	if r.Any.GetTypeUrl() != typeURL {
		return Resource{Name: r.Name, Err: fmt.Errorf("resource of type %q in a response of type %q", r.Any.GetTypeUrl(), typeURL)}
	}
	// Every resource of the response shares one copy of the type URL.
	r.Any.TypeUrl = typeURL
	return r
}

// FromDelta returns the Update of a delta response.
func FromDelta(resp *discoveryv3.DeltaDiscoveryResponse) *Update {
	u := &Update{TypeURL: resp.GetTypeUrl(), Version: resp.GetSystemVersionInfo(), Nonce: resp.GetNonce(), Errors: resourceErrors(resp.GetResourceErrors()),
		Delta: true, Resources: make([]Resource, 0, len(resp.GetResources()))}
	for _, r := range resp.GetResources() {
		if r.GetResource() == nil {
			continue // a heartbeat: this client has no resource TTLs
		}
		u.Resources = append(u.Resources, Resource{Name: xdstp.Received(r.GetName()), Version: r.GetVersion(), Any: r.GetResource()}.check(u.TypeURL))
	}
	for _, name := range resp.GetRemovedResources() {
		u.Removed = append(u.Removed, xdstp.Received(name))
	}
	return u
}

// adsStream is one ADS stream, State of the World or delta.
type adsStream interface {
	receive() (*Update, error)
	send(r outgoing) error
}

// open opens an ADS stream of the server's protocol.
func (c *Conn) open(ctx context.Context, ads discoveryv3.AggregatedDiscoveryServiceClient) (adsStream, error) {
	if c.cfg.Delta {
		st, err := ads.DeltaAggregatedResources(ctx)
		return deltaStream{st}, err
	}
	st, err := ads.StreamAggregatedResources(ctx)
	return sotwStream{st}, err
}

type sotwStream struct {
	st discoveryv3.AggregatedDiscoveryService_StreamAggregatedResourcesClient
}

func (s sotwStream) receive() (*Update, error) {
	resp, err := s.st.Recv()
	if err != nil {
		return nil, err
	}
	return FromSotW(resp), nil
}

func (s sotwStream) send(r outgoing) error { return s.st.Send(r.sotw) }

type deltaStream struct {
	st discoveryv3.AggregatedDiscoveryService_DeltaAggregatedResourcesClient
}

func (s deltaStream) receive() (*Update, error) {
	resp, err := s.st.Recv()
	if err != nil {
		return nil, err
	}
	return FromDelta(resp), nil
}

func (s deltaStream) send(r outgoing) error { return s.st.Send(r.delta) }
