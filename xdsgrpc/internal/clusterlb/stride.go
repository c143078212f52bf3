package clusterlb

import (
	"math/rand/v2"
	"slices"
	"sync/atomic"
)

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
// A pick skips, on average, n*strideMax/sum of the scaled weights entries;
// where that is more than maxMeanSkips (a few entries much heavier than
// many others: one locality of weight 2^32-1 beside 100,000 of weight 1
// would cost each pick 60,000 steps), the schedule draws a random number
// and finds its entry by binary search over the cumulative weights
// instead, as C-core's weighted_target picks localities: O(log n) a pick.
type stride struct {
	weights []uint16
	seq     atomic.Uint32
	// cumulative, set instead of weights for skewed weights, holds the
	// running sums of the weights.
	cumulative []uint64
}

// maxMeanSkips is the mean number of entries a stride pick may skip.
const maxMeanSkips = 16

// newStride returns a schedule over entries of the given weights, which
// must be positive, starting at sequence number start.
func newStride(weights []uint32, start uint32) *stride {
	var top uint32
	for _, w := range weights {
		top = max(top, w)
	}
	s := &stride{weights: make([]uint16, len(weights))}
	var sum uint64
	for i, w := range weights {
		scaled := (uint64(w)*strideMax + uint64(top)/2) / uint64(top)
		s.weights[i] = uint16(max(scaled, 1))
		sum += uint64(s.weights[i])
	}
	if uint64(len(weights))*strideMax > maxMeanSkips*sum {
		s.weights, s.cumulative = nil, make([]uint64, len(weights))
		var c uint64
		for i, w := range weights {
			c += uint64(w)
			s.cumulative[i] = c
		}
	}
	s.seq.Store(start)
	return s
}

// next returns the index of the entry to use.
func (s *stride) next() int {
	if s.cumulative != nil {
		x := rand.Uint64N(s.cumulative[len(s.cumulative)-1]) + 1
		i, _ := slices.BinarySearch(s.cumulative, x)
		return i
	}
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
