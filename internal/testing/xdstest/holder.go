package xdstest

import (
	"maps"
	"slices"
	"strconv"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/protobuf/proto"
)

// Holder is a Script that holds, per type, the resources it serves on one
// State of the World stream, and sends all of a type's at each push, as a
// State of the World server does. The four gRPC resource types are named
// by their own name fields.
//
//	h := xdstest.NewHolder(script)
//	h.Take()                          // the client's stream
//	h.Want(ldsURL, "L")               // its request for L
//	h.Push(ldsURL, listener)          // answered
type Holder struct {
	Script
	// St is the stream the Holder serves, the last one Take returned.
	St      *Stream
	res     map[string]map[string]proto.Message // by type URL, by name
	version int
}

// NewHolder returns a Holder of s that holds nothing yet.
func NewHolder(s Script) *Holder {
	return &Holder{Script: s, res: map[string]map[string]proto.Message{}}
}

// Take waits for the client's next ADS stream and serves it from now on.
func (h *Holder) Take() *Stream {
	h.T.Helper()
	h.St = h.NextStream()
	return h.St
}

// ResourceName returns the name of a Listener, RouteConfiguration, Cluster
// or ClusterLoadAssignment; it panics on another message.
func ResourceName(m proto.Message) string {
	switch r := m.(type) {
	case *listenerv3.Listener:
		return r.GetName()
	case *routev3.RouteConfiguration:
		return r.GetName()
	case *clusterv3.Cluster:
		return r.GetName()
	case *endpointv3.ClusterLoadAssignment:
		return r.GetClusterName()
	}
	panic("xdstest: not a gRPC resource type")
}

// Response returns a response of everything the Holder has of typeURL, at
// a new version.
func (h *Holder) Response(typeURL string) *discoveryv3.DiscoveryResponse {
	h.version++
	var all []proto.Message
	for _, name := range slices.Sorted(maps.Keys(h.res[typeURL])) {
		all = append(all, h.res[typeURL][name])
	}
	return Response(typeURL, strconv.Itoa(h.version), all...)
}

// Push adds or replaces res of typeURL and sends all the Holder has of it.
func (h *Holder) Push(typeURL string, res ...proto.Message) {
	h.T.Helper()
	if h.res[typeURL] == nil {
		h.res[typeURL] = map[string]proto.Message{}
	}
	for _, r := range res {
		h.res[typeURL][ResourceName(r)] = r
	}
	h.Send(h.St, h.Response(typeURL))
}

// Remove deletes names of typeURL and sends what is left.
func (h *Holder) Remove(typeURL string, names ...string) {
	h.T.Helper()
	for _, n := range names {
		delete(h.res[typeURL], n)
	}
	h.Send(h.St, h.Response(typeURL))
}

// PushErrors sends the resources of typeURL but for those errs name, which
// it reports as xRFC TP3 resource errors.
func (h *Holder) PushErrors(typeURL string, errs ...*discoveryv3.ResourceError) {
	h.T.Helper()
	resp := h.Response(typeURL)
	failed := map[string]bool{}
	for _, e := range errs {
		failed[e.GetResourceName().GetName()] = true
	}
	kept := resp.Resources[:0]
	for _, name := range slices.Sorted(maps.Keys(h.res[typeURL])) {
		if !failed[name] {
			kept = append(kept, Response(typeURL, "", h.res[typeURL][name]).Resources[0])
		}
	}
	resp.Resources, resp.ResourceErrors = kept, errs
	h.Send(h.St, resp)
}

// Want reads the requests of typeURL on St until one subscribes to exactly
// names, and fails the test if none does in time.
func (h *Holder) Want(typeURL string, names ...string) {
	h.T.Helper()
	names = slices.Sorted(slices.Values(names))
	var seen [][]string
	for {
		req, err := h.St.RecvType(h.Ctx, typeURL)
		if err != nil {
			h.T.Fatalf("waiting for a %s request for %v: %v; saw %v", typeURL, names, err, seen)
		}
		got := slices.Sorted(slices.Values(req.GetResourceNames()))
		if slices.Equal(got, names) {
			return
		}
		seen = append(seen, got)
	}
}
