package httpfilter

import (
	"fmt"
	"sync"

	"google.golang.org/protobuf/types/known/anypb"
)

// TypeURLPrefix starts the type URL of every config message.
const TypeURLPrefix = "type.googleapis.com/"

// Filter is one kind of HTTP filter: it parses the configs that name it.
// What running it takes is added by the interface of each side
// ([ServerFilter] on servers). A Filter is used concurrently and must
// keep no state between calls.
type Filter interface {
	// TypeURLs returns the type URLs the filter is registered under: those
	// of its config messages and of its override messages.
	TypeURLs() []string
	// ParseConfig parses the filter's config from http_filters, cfg as
	// received (in its TypedStruct, when it came in one). The error says
	// which field is wrong and why.
	ParseConfig(cfg *anypb.Any) (Config, error)
	// ParseOverride parses an override from typed_per_filter_config, as
	// ParseConfig does; a filter that takes no override returns an error.
	ParseOverride(cfg *anypb.Any) (Config, error)
}

// Config is a parsed config or override: only its filter reads it.
type Config any

// registry holds the filters by type URL.
var registry = struct {
	sync.RWMutex
	byURL map[string]Filter
}{byURL: map[string]Filter{}}

// Register makes f the filter for each of its type URLs, replacing the
// filter registered before for any of them. It is meant to be called from
// an init func, before any resource is decoded; it panics when f has no
// type URL or an empty one.
func Register(f Filter) {
	urls := f.TypeURLs()
	if len(urls) == 0 {
		panic(fmt.Sprintf("httpfilter: %T has no type URL", f))
	}
	registry.Lock()
	defer registry.Unlock()
	for _, u := range urls {
		if u == "" {
			panic(fmt.Sprintf("httpfilter: %T has an empty type URL", f))
		}
		registry.byURL[u] = f
	}
}

// Get returns the filter registered for typeURL, nil when there is none.
func Get(typeURL string) Filter {
	registry.RLock()
	defer registry.RUnlock()
	return registry.byURL[typeURL]
}

func init() {
	Register(router{})
	Register(rbacFilter{})
	Register(fault{})
}
