package clusterlb_test

import (
	"testing"

	"github.com/xdslens/xdslens/xdsgrpc/internal/clusterlb"
)

// skewed is one locality of the largest weight beside n-1 of weight 1.
func skewed(n int) []uint32 {
	w := make([]uint32, n)
	for i := range w {
		w[i] = 1
	}
	w[0] = 1<<32 - 1
	return w
}

// TestStrideSkewedWeights checks the schedule where a stride would skip
// tens of thousands of entries a pick: the shares still follow the
// weights (entry 0 is 2^32-1 of 2^32-1+999), and the light entries are
// still reached when they are heavy enough together.
func TestStrideSkewedWeights(t *testing.T) {
	next := clusterlb.StridePicks(skewed(1000))
	const n = 10_000
	first := 0
	for range n {
		if next() == 0 {
			first++
		}
	}
	if first < n-5 {
		t.Errorf("entry 0 taken %d times of %d, want nearly all", first, n)
	}
	// 1,000 entries of weight 1 beside one of 1,000: each half.
	w := make([]uint32, 1001)
	for i := range w {
		w[i] = 1
	}
	w[0] = 1000
	next = clusterlb.StridePicks(w)
	first = 0
	for range n {
		if next() == 0 {
			first++
		}
	}
	if first < 4500 || first > 5500 {
		t.Errorf("entry 0 of weight 1000 beside 1000 of weight 1 taken %d times of %d, want about half", first, n)
	}
}

// BenchmarkStrideSkewed picks among 100,000 localities, one of weight
// 2^32-1 and the others of weight 1.
func BenchmarkStrideSkewed(b *testing.B) {
	next := clusterlb.StridePicks(skewed(100_000))
	b.ReportAllocs()
	for b.Loop() {
		next()
	}
}
