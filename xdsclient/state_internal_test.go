package xdsclient

import (
	"testing"

	"github.com/xdslens/xdslens/xdsclient/internal/cache"
)

// CacheState is the cache's State, value for value: hooks and Dump convert
// one into the other.
func TestCacheStateIsTheCacheState(t *testing.T) {
	for _, p := range []struct {
		public CacheState
		cache  cache.State
	}{
		{StateNone, cache.StateNone}, {StateRequested, cache.StateRequested}, {StateDoesNotExist, cache.StateDoesNotExist},
		{StateACKed, cache.StateACKed}, {StateNACKed, cache.StateNACKed}, {StateReceivedError, cache.StateReceivedError},
		{StateTimeout, cache.StateTimeout},
	} {
		if CacheState(p.cache) != p.public {
			t.Errorf("cache state %d is %v, want %v", p.cache, CacheState(p.cache), p.public)
		}
	}
}
