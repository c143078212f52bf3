package dataplane

import (
	"context"
	"errors"
	"io"
	"strconv"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

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

// endWatcher is a client stream that calls end once, with the error the
// RPC ended with (nil for OK), when the stream ends: when RecvMsg or
// Header fails (io.EOF is success), when RecvMsg returns the one response
// of a stream whose server does not stream, or when its context is done.
type endWatcher struct {
	grpc.ClientStream
	serverStreams bool
	once          sync.Once
	stop          func() bool
	end           func(error)
}

// watchEnd returns s, which ctx governs, wrapped so that end is called
// once when the RPC ends.
func watchEnd(ctx context.Context, desc *grpc.StreamDesc, s grpc.ClientStream, end func(error)) grpc.ClientStream {
	w := &endWatcher{ClientStream: s, serverStreams: desc.ServerStreams, end: end}
	w.stop = context.AfterFunc(ctx, func() { w.finish(status.FromContextError(ctx.Err()).Err()) })
	return w
}

func (w *endWatcher) finish(err error) {
	w.once.Do(func() { w.end(err) })
}

func (w *endWatcher) RecvMsg(m any) error {
	err := w.ClientStream.RecvMsg(m)
	switch {
	case errors.Is(err, io.EOF):
		w.stop()
		w.finish(nil)
	case err != nil:
		w.stop()
		w.finish(err)
	case !w.serverStreams:
		w.stop()
		w.finish(nil)
	}
	return err
}

func (w *endWatcher) Header() (metadata.MD, error) {
	md, err := w.ClientStream.Header()
	if err != nil {
		w.stop()
		w.finish(err)
	}
	return md, err
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
