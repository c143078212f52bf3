package lrs_test

import (
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/xdslens/xdslens/xdsclient/lrs"
)

var errCall = errors.New("call failed")

// BenchmarkRecordCall records one whole call (start, finish, a server
// load) per op in one of 4 known localities.
func BenchmarkRecordCall(b *testing.B) {
	load, locs := seenLocalities(4)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		l := locs[i&3]
		i++
		load.CallStarted(l)
		load.CallServerLoad(l, "cpu", 0.5)
		load.CallFinished(l, errCall)
	}
}

// BenchmarkCallStarted is the cost of one CallStarted.
func BenchmarkCallStarted(b *testing.B) {
	load := lrs.NewStore().Cluster("c", "svc")
	l := benchLocalities(1)[0]
	load.CallStarted(l)
	b.ReportAllocs()
	for b.Loop() {
		load.CallStarted(l)
	}
}

// BenchmarkCallDropped is the cost of one CallDropped of a known category.
func BenchmarkCallDropped(b *testing.B) {
	load := lrs.NewStore().Cluster("c", "svc")
	load.CallDropped("throttle")
	b.ReportAllocs()
	for b.Loop() {
		load.CallDropped("throttle")
	}
}

// BenchmarkRecordCallParallel records whole calls from GOMAXPROCS
// goroutines at once, each on its own locality of 16.
func BenchmarkRecordCallParallel(b *testing.B) {
	load, locs := seenLocalities(16)
	b.ReportAllocs()
	var next atomic.Uint32
	b.RunParallel(func(pb *testing.PB) {
		l := locs[next.Add(1)%16]
		for pb.Next() {
			load.CallStarted(l)
			load.CallServerLoad(l, "cpu", 0.5)
			load.CallFinished(l, nil)
		}
	})
}

// seenLocalities returns a ClusterLoad that has seen n localities and the
// metric "cpu" in each, and the localities.
func seenLocalities(n int) (*lrs.ClusterLoad, []lrs.Locality) {
	load := lrs.NewStore().Cluster("c", "svc")
	locs := benchLocalities(n)
	for _, l := range locs {
		load.CallStarted(l)
		load.CallFinished(l, nil)
		load.CallServerLoad(l, "cpu", 0)
	}
	return load, locs
}

func benchLocalities(n int) []lrs.Locality {
	out := make([]lrs.Locality, n)
	for i := range out {
		out[i] = lrs.Locality{Region: "region", Zone: fmt.Sprintf("zone-%d", i), SubZone: "sub"}
	}
	return out
}
