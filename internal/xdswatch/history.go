package xdswatch

import (
	"slices"
	"sync"

	"github.com/xdslens/xdslens/xdsgrpc"
	"github.com/xdslens/xdslens/xdsgrpc/history"
)

// historySet is the config histories of the xds:/// channels, one Builder
// each, for the admin port (admin.WithConfigHistory). A nil set keeps
// nothing.
type historySet struct {
	mu       sync.Mutex
	builders []*xdsgrpc.Builder // in the order the channels started
}

// add adds the histories of b's channels.
func (s *historySet) add(b *xdsgrpc.Builder) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.builders = append(s.builders, b)
}

// remove removes the histories of b's channels.
func (s *historySet) remove(b *xdsgrpc.Builder) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.builders = slices.DeleteFunc(s.builders, func(x *xdsgrpc.Builder) bool { return x == b })
}

// ConfigHistory returns the histories of the live channels, oldest
// channel first.
func (s *historySet) ConfigHistory() []history.Channel {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	builders := slices.Clone(s.builders)
	s.mu.Unlock()
	var out []history.Channel
	for _, b := range builders {
		out = append(out, b.ConfigHistory()...)
	}
	return out
}
