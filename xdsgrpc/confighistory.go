package xdsgrpc

import (
	"slices"

	"github.com/xdslens/xdslens/xdsgrpc/history"
)

// WithConfigHistory has each channel of the Builder keep its last n
// configs, and the errors that failed its whole config, with what changed
// and the versions of the resources behind each (package history):
// history.DefaultSize by default, none for n = 0. Builder.ConfigHistory
// lists them; admin.WithConfigHistory serves them on the admin port.
func WithConfigHistory(n int) Option {
	return optionFunc(func(o *options) { o.historySize = max(n, 0) })
}

// ConfigHistory returns the history of every live channel of the Builder,
// by target, channels of one target in the order they started; none when
// WithConfigHistory(0) turned the histories off. A channel's history goes
// when it closes.
func (b *Builder) ConfigHistory() []history.Channel {
	b.mu.Lock()
	targets := make([]string, 0, len(b.channels))
	for t := range b.channels {
		targets = append(targets, t)
	}
	slices.Sort(targets)
	var recorders []*history.Recorder
	for _, t := range targets {
		for _, r := range b.channels[t] {
			if r.history != nil {
				recorders = append(recorders, r.history)
			}
		}
	}
	b.mu.Unlock()
	out := make([]history.Channel, 0, len(recorders))
	for _, h := range recorders {
		out = append(out, h.Channel())
	}
	return out
}
