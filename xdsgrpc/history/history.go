package history

import (
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	"google.golang.org/genproto/googleapis/rpc/code"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/xdslens/xdslens/internal/truncate"
	"github.com/xdslens/xdslens/xdsclient/xdsconfig"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
)

// DefaultSize is how many entries a channel keeps unless told otherwise.
const DefaultSize = 16

// Bounds of one entry, which keep its memory bounded whatever the config
// and the control plane's strings.
const (
	// MaxChanges is how many changes an entry lists; ChangesOmitted
	// counts the others.
	MaxChanges = 32
	// MaxResources is how many resources an entry lists;
	// ResourcesOmitted counts the others.
	MaxResources = 32
	// MaxText is the longest a string of an entry may be, in bytes (a
	// name, a version, a description, a message): longer ones are cut,
	// saying how many bytes were left out.
	MaxText = 256
)

// Values of Entry.Event.
const (
	// EventConfig is a config the channel started using.
	EventConfig = "config"
	// EventConfigError is an error that failed the channel's whole config.
	EventConfigError = "config_error"
)

// Channel is the history of one channel.
type Channel struct {
	// Target is the channel's target, such as "xdslens:///payments";
	// Listener the name of the Listener resource it routes by.
	Target   string `json:"target"`
	Listener string `json:"listener"`
	// Capacity is how many entries the channel keeps; Recorded how many
	// it recorded since it started, those no longer kept included.
	Capacity int    `json:"capacity"`
	Recorded uint64 `json:"recorded"`
	// Entries are the last entries, oldest first.
	Entries []Entry `json:"entries"`
}

// Entry is one config a channel started using, or the error that failed
// its whole config.
type Entry struct {
	// Seq numbers the channel's entries from 1.
	Seq uint64 `json:"seq"`
	// Time is when the channel got it.
	Time time.Time `json:"time"`
	// Event is EventConfig or EventConfigError.
	Event string `json:"event"`
	// RouteConfig is the name of the route configuration ("" when inline
	// in the Listener), VirtualHost the virtual host chosen for the
	// channel's authority; both "" for an error.
	RouteConfig string `json:"route_config,omitempty"`
	VirtualHost string `json:"virtual_host,omitempty"`
	// Resources are the resources behind the config, with the versions
	// that brought them: the Listener, the route configuration, then each
	// usable cluster and its endpoints, by name.
	Resources        []Resource `json:"resources,omitempty"`
	ResourcesOmitted int        `json:"resources_omitted,omitempty"`
	// Changes say what differs from the last config the channel had
	// (errors between them aside), in the order listener, route_config,
	// virtual_host, routes in order, clusters by name; for the first
	// config, everything is added. Nil for an error.
	Changes        []Change `json:"changes,omitempty"`
	ChangesOmitted int      `json:"changes_omitted,omitempty"`
	// Error is the error that failed the whole config, for EventConfigError.
	Error *Error `json:"error,omitempty"`
}

// Resource is one xDS resource behind a config.
type Resource struct {
	// Type is "lds", "rds", "cds" or "eds".
	Type string `json:"type"`
	Name string `json:"name"`
	// Version is the version_info of the response that brought the
	// resource as the config uses it (a response that resends it
	// unchanged does not change it).
	Version string `json:"version"`
}

// Change is one difference between two configs, in the parts that route
// RPCs.
type Change struct {
	// Kind is "listener", "route_config", "virtual_host", "route" or
	// "cluster".
	Kind string `json:"kind"`
	// Name names what changed: a resource, the virtual host, a cluster,
	// or a route by its name or "#INDEX" (its position in the virtual
	// host's routes as received, as in explain and on spans; in the new
	// config, or in the old one when removed).
	Name string `json:"name"`
	// Op is "added", "removed" or "changed".
	Op string `json:"op"`
	// Before and After describe it in words, before and after the
	// change ("" for what was added, or removed).
	Before string `json:"before,omitempty"`
	After  string `json:"after,omitempty"`
}

// Error is the error that failed a config.
type Error struct {
	// Code is the gRPC code name that the dependency manager got (RPCs
	// fail UNAVAILABLE); Message is what the channel's RPCs fail with.
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Source gives the histories of channels, such as an xdsgrpc.Builder's.
type Source interface {
	ConfigHistory() []Channel
}

// Recorder keeps the last entries of one channel. The channel's
// resolver records its configs and errors one at a time; Channel may be
// called from any goroutine.
type Recorder struct {
	target, listener string
	now              func() time.Time

	// last is the last config recorded, which the next one is compared
	// with, and lastResources its entry's resources; only the recording
	// goroutine uses them.
	last          *xdsconfig.Config
	lastResources resourceList

	mu   sync.Mutex
	ring []Entry // guarded by mu
	n    uint64  // entries recorded; guarded by mu
}

// NewRecorder returns a Recorder of the channel of target, routed by the
// Listener named listener, that keeps its last size entries (at least 1).
func NewRecorder(target, listener string, size int) *Recorder {
	return &Recorder{target: target, listener: listener, now: time.Now, ring: make([]Entry, 0, max(size, 1))}
}

// Config records that the channel started using cfg.
func (r *Recorder) Config(cfg *xdsconfig.Config) {
	r.ConfigAfter(r.last, xdsconfig.Diff(r.last, cfg), cfg)
}

// ConfigAfter is Config for a caller that has diff, xdsconfig.Diff(prev,
// cfg), at hand: when prev is the last config recorded, diff is used
// rather than made again (it costs a pass over the clusters).
func (r *Recorder) ConfigAfter(prev *xdsconfig.Config, diff xdsconfig.Changes, cfg *xdsconfig.Config) {
	if prev != r.last {
		diff = xdsconfig.Diff(r.last, cfg)
	}
	e := Entry{Time: r.now(), Event: EventConfig, RouteConfig: text(cfg.RouteConfigName)}
	if cfg.VirtualHost != nil {
		e.VirtualHost = text(cfg.VirtualHost.Name)
	}
	res, ok := r.lastResources.patched(r.last, cfg, diff)
	if !ok {
		res = resources(cfg)
	}
	e.Resources, e.ResourcesOmitted = res.list, res.omitted
	e.Changes, e.ChangesOmitted = changes(r.last, cfg, diff)
	r.last, r.lastResources = cfg, res
	r.add(e)
}

// Error records that the channel's whole config failed with err.
func (r *Recorder) Error(err error) {
	r.add(Entry{Time: r.now(), Event: EventConfigError, Error: errorOf(err)})
}

// errorOf returns the code the dependency manager got and the message the
// channel's RPCs fail with.
func errorOf(err error) *Error {
	var re *xdsconfig.ResourceError
	if errors.As(err, &re) {
		return &Error{Code: codeName(re.CauseCode()), Message: text(re.Error())}
	}
	st := status.Convert(err)
	return &Error{Code: codeName(st.Code()), Message: text(st.Message())}
}

// codeName returns the name of c in the gRPC spec, such as "UNAVAILABLE".
func codeName(c codes.Code) string { return code.Code(c).String() }

// add numbers e and keeps it, dropping the oldest entry when full.
func (r *Recorder) add(e Entry) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.n++
	e.Seq = r.n
	if len(r.ring) < cap(r.ring) {
		r.ring = append(r.ring, e)
		return
	}
	r.ring[int((r.n-1)%uint64(cap(r.ring)))] = e
}

// Channel returns the channel's history: a copy, oldest entry first.
func (r *Recorder) Channel() Channel {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := Channel{Target: r.target, Listener: r.listener, Capacity: cap(r.ring), Recorded: r.n, Entries: make([]Entry, 0, len(r.ring))}
	start := 0
	if len(r.ring) == cap(r.ring) {
		start = int(r.n % uint64(cap(r.ring)))
	}
	c.Entries = append(c.Entries, r.ring[start:]...)
	c.Entries = append(c.Entries, r.ring[:start]...)
	return c
}

// resourceList is the resources of an entry: at most MaxResources of
// them, and how many more there are.
type resourceList struct {
	list    []Resource
	omitted int
}

// resources lists the resources behind cfg: the listener, the route
// configuration, then the usable clusters by name, each with its EDS
// resource unless a cluster before it listed that one. Only the first
// clusters by name are listed, found without sorting them all.
func resources(cfg *xdsconfig.Config) resourceList {
	out := resourceList{list: []Resource{{Type: "lds", Name: text(cfg.ListenerName), Version: text(cfg.ListenerVersion)}}}
	if cfg.RouteConfigName != "" {
		out.list = append(out.list, Resource{Type: "rds", Name: text(cfg.RouteConfigName), Version: text(cfg.RouteConfigVersion)})
	}
	// Each cluster lists one or two resources: the first MaxResources
	// clusters by name are enough to fill the list.
	first := make([]string, 0, MaxResources)
	usable, eds := 0, map[string]bool{}
	for name, s := range cfg.Clusters {
		if s.Err != nil || s.Cluster == nil {
			continue
		}
		usable++
		if s.Cluster.Kind == xdsresource.ClusterEDS && s.Endpoints != nil {
			eds[s.Cluster.EDSName()] = true
		}
		if len(first) == MaxResources && name >= first[len(first)-1] {
			continue
		}
		i, _ := slices.BinarySearch(first, name)
		if len(first) == MaxResources {
			first = first[:len(first)-1]
		}
		first = slices.Insert(first, i, name)
	}
	total := len(out.list) + usable + len(eds)
	listed := map[string]bool{}
	for _, name := range first {
		if len(out.list) == MaxResources {
			break
		}
		s := cfg.Clusters[name]
		out.list = append(out.list, Resource{Type: "cds", Name: text(name), Version: text(s.Version)})
		if s.Cluster.Kind == xdsresource.ClusterEDS && s.Endpoints != nil && len(out.list) < MaxResources {
			if n := s.Cluster.EDSName(); !listed[n] {
				listed[n] = true
				out.list = append(out.list, Resource{Type: "eds", Name: text(n), Version: text(s.EndpointsVersion)})
			}
		}
	}
	out.omitted = total - len(out.list)
	return out
}

// patched returns the resources of config to, made from l, those of
// config from, when only versions can differ: the same route
// configuration source and the same clusters, those that changed keeping
// their Cluster resource and having endpoints as before or none as before
// (an endpoints or resolution note change, as an EDS update makes). It
// reports false when they must be listed again.
func (l resourceList) patched(from, to *xdsconfig.Config, diff xdsconfig.Changes) (resourceList, bool) {
	if from == nil || len(l.list) == 0 || len(diff.Added) > 0 || len(diff.Removed) > 0 || (from.RouteConfigName == "") != (to.RouteConfigName == "") {
		return resourceList{}, false
	}
	for _, name := range diff.Changed {
		a, b := from.Clusters[name], to.Clusters[name]
		if a.Cluster != b.Cluster || (a.Endpoints == nil) != (b.Endpoints == nil) {
			return resourceList{}, false
		}
	}
	out := resourceList{list: slices.Clone(l.list), omitted: l.omitted}
	out.list[0] = Resource{Type: "lds", Name: text(to.ListenerName), Version: text(to.ListenerVersion)}
	if to.RouteConfigName != "" {
		out.list[1] = Resource{Type: "rds", Name: text(to.RouteConfigName), Version: text(to.RouteConfigVersion)}
	}
	for _, name := range diff.Changed {
		s := to.Clusters[name]
		if s.Cluster == nil || s.Cluster.Kind != xdsresource.ClusterEDS {
			continue
		}
		eds := text(s.Cluster.EDSName())
		for i := range out.list {
			if r := &out.list[i]; r.Type == "eds" && r.Name == eds {
				r.Version = text(s.EndpointsVersion)
			}
		}
	}
	return out, true
}

// text bounds a string of an entry to MaxText bytes, on one line.
func text(s string) string {
	if strings.ContainsAny(s, "\r\n") {
		s = strings.Join(strings.FieldsFunc(s, func(r rune) bool { return r == '\n' || r == '\r' }), " ")
	}
	return truncate.String(s, MaxText)
}
