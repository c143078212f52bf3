package rpcstatus

import (
	"context"
	"errors"
	"io"
	"sync/atomic"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// endWatcher is a client stream that calls end once, with the error the
// RPC ended with (nil for OK), when the stream ends: when RecvMsg or
// Header fails (io.EOF is success), when RecvMsg returns the one response
// of a stream whose server does not stream, or when its context is done.
type endWatcher struct {
	grpc.ClientStream
	serverStreams bool
	ended         atomic.Bool
	stop          func() bool
	end           func(error)
}

// WatchEnd returns s, the stream of an RPC of desc whose context is ctx,
// wrapped so that end is called once when the RPC ends, with the error it
// ended with: nil for OK, the status of RecvMsg or Header, or the status
// of ctx's end.
func WatchEnd(ctx context.Context, desc *grpc.StreamDesc, s grpc.ClientStream, end func(error)) grpc.ClientStream {
	w := &endWatcher{ClientStream: s, serverStreams: desc.ServerStreams, end: end}
	w.stop = context.AfterFunc(ctx, func() { w.finish(status.FromContextError(ctx.Err()).Err()) })
	return w
}

func (w *endWatcher) finish(err error) {
	if w.ended.CompareAndSwap(false, true) {
		w.end(err)
	}
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
