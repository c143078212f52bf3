package clusterlb

import "sync/atomic"

// strideMax is the weight the largest weight of a stride scheduler is
// scaled to.
const strideMax = 1<<16 - 1

// stride is a weighted round-robin schedule that needs no lock: the static
// stride scheduler of gRPC C-core's weighted_round_robin policy. A shared
// sequence number walks the entries in turn; entry i, on the g-th round,
// is taken when (w_i*g + i*strideMax/2) mod strideMax falls in the top w_i
// of [0, strideMax), where w_i is its weight scaled so that the largest is
// strideMax. Each entry is thus taken w_i times every strideMax rounds,
// spread evenly over the rounds, and the entries of equal weight in plain
// round robin. Unlike C-core, weights are not capped relative to their
// mean: locality weights are the control plane's intent, not estimates.
// A pick skips at most, on average, n*max/sum entries.
type stride struct {
	weights []uint16
	seq     atomic.Uint32
}

// newStride returns a schedule over entries of the given weights, which
// must be positive, starting at sequence number start.
func newStride(weights []uint32, start uint32) *stride {
	var top uint32
	for _, w := range weights {
		top = max(top, w)
	}
	s := &stride{weights: make([]uint16, len(weights))}
	for i, w := range weights {
		scaled := (uint64(w)*strideMax + uint64(top)/2) / uint64(top)
		s.weights[i] = uint16(max(scaled, 1))
	}
	s.seq.Store(start)
	return s
}

// next returns the index of the entry to use.
func (s *stride) next() int {
	n := uint32(len(s.weights))
	for {
		seq := s.seq.Add(1)
		i, round := seq%n, seq/n
		w := uint32(s.weights[i])
		if (uint64(w)*uint64(round)+uint64(i)*(strideMax/2))%strideMax >= uint64(strideMax-w) {
			return int(i)
		}
	}
}
