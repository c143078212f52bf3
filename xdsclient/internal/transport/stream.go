package transport

import (
	"sync"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc/codes"

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

	// free gives back the bytes the resources are slices of to the
	// Stream they came from (Stream.Recv), and Resources go back to pool
	// (in reuse) for the next response.
	free  func()
	reuse *[]Resource
	pool  *sync.Pool
}

// release gives back the bytes the resources of u are slices of, and
// the resources themselves: once the handler has taken u
// (Handler.Response), which copies what it keeps.
func (u *Update) release() {
	if u.free != nil {
		u.free()
		u.free = nil
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
