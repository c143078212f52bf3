package xdstest

import (
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/xdslens/xdslens/internal/xdswatch/demo/controlplane"
	"github.com/xdslens/xdslens/xdsclient"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
)

// FullStateClusters returns a full-state CDS response of the n EDS clusters
// c0 to c<n-1>, each with its own name as its EDS service name, with
// variant as its version and nonce. Each variant gives every cluster other
// bytes (its connect timeout), so that two responses of different variants
// change every resource. The nonce is set since a [PushServer] sends
// responses as they are.
func FullStateClusters(n, variant int) *discoveryv3.DiscoveryResponse {
	resp := &discoveryv3.DiscoveryResponse{TypeUrl: xdsresource.ClusterType.TypeURL(), VersionInfo: fmt.Sprint(variant), Nonce: fmt.Sprint(variant)}
	for i := range n {
		c := controlplane.Cluster(fmt.Sprintf("c%d", i), fmt.Sprintf("c%d", i))
		c.ConnectTimeout = durationpb.New(time.Duration(variant+1) * time.Second)
		a, _ := anypb.New(c)
		resp.Resources = append(resp.Resources, a)
	}
	return resp
}

// Countdown is an xdsclient.Watcher for benchmarks, to watch many
// resources at once: [Countdown.Wait] returns once ResourceChanged has been
// called n times, for whichever resources, since the Countdown was made or
// last [Countdown.Reset]. It ignores AmbientError.
type Countdown struct {
	n       int64
	calls   atomic.Int64
	reached chan struct{}
}

// NewCountdown returns a Countdown of n calls.
func NewCountdown(n int) *Countdown {
	return &Countdown{n: int64(n), reached: make(chan struct{}, 1)}
}

// ResourceChanged counts one call.
func (c *Countdown) ResourceChanged(*xdsclient.Resource, error) {
	if c.calls.Add(1) == c.n {
		c.reached <- struct{}{}
	}
}

// AmbientError does nothing.
func (c *Countdown) AmbientError(error) {}

// Reset starts counting again from zero.
func (c *Countdown) Reset() { c.calls.Store(0) }

// Wait blocks until the count has been reached since the last Wait.
func (c *Countdown) Wait() { <-c.reached }

// RunUpdates runs the loop of a benchmark of updates, b.Loop, against a
// client of s that watches every resource of responses with w and already
// holds responses[0]. If changed, each iteration pushes the other response
// than the last and waits until w has had a callback for every resource;
// if not, it pushes responses[0] again under a new nonce, which changes
// nothing, and waits for the client's ACK of that nonce.
func (s *PushServer) RunUpdates(b *testing.B, w *Countdown, responses [2]*discoveryv3.DiscoveryResponse, changed bool) {
	i := 0
	same := proto.Clone(responses[0]).(*discoveryv3.DiscoveryResponse)
	for b.Loop() {
		i++
		w.Reset()
		if changed {
			s.Push <- responses[i%2]
			w.Wait()
			continue
		}
		// The server is done with same once the ACK of its last nonce is
		// in: it may be given a new one.
		same.Nonce = "unchanged-" + strconv.Itoa(i)
		s.Push <- same
		for req := range s.Requests {
			if req.GetResponseNonce() == same.Nonce {
				break
			}
		}
	}
}
