package dataplane

import (
	"strconv"
	"sync"

	"google.golang.org/grpc"

	"github.com/xdslens/xdslens/xdsclient/lrs"
)

// methodLabel is grpc.method as gRFC A66 has it on clients, as gRPC-Go
// labels it: the method without its leading slash when the call is made
// with grpc.StaticMethod (as generated stubs make it), "other" otherwise,
// so that RPCs to methods nobody registered cannot grow the number of
// series without bound.
func methodLabel(method string, opts []grpc.CallOption) string {
	for _, o := range opts {
		if _, ok := o.(grpc.StaticMethodCallOption); ok {
			return trimSlash(method)
		}
	}
	return "other"
}

func trimSlash(method string) string {
	if len(method) > 0 && method[0] == '/' {
		return method[1:]
	}
	return method
}

// localityLabels renders localities as gRFC A78's grpc.lb.locality label
// has them ({region="r", zone="z", sub_zone="s"}), each once.
type localityLabels struct {
	mu     sync.RWMutex
	labels map[lrs.Locality]string
}

// label returns the label of l, "" for an RPC sent to no endpoint.
func (c *localityLabels) label(l lrs.Locality, sent bool) string {
	if !sent {
		return ""
	}
	c.mu.RLock()
	s, ok := c.labels[l]
	c.mu.RUnlock()
	if ok {
		return s
	}
	s = "{region=" + strconv.Quote(l.Region) + ", zone=" + strconv.Quote(l.Zone) + ", sub_zone=" + strconv.Quote(l.SubZone) + "}"
	c.mu.Lock()
	if c.labels == nil {
		c.labels = map[lrs.Locality]string{}
	}
	c.labels[l] = s
	c.mu.Unlock()
	return s
}
