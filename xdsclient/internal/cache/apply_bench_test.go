package cache_test

import (
	"strconv"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/xdslens/xdslens/internal/xdswatch/demo/controlplane"
	"github.com/xdslens/xdslens/xdsclient/internal/cache"
	"github.com/xdslens/xdslens/xdsclient/internal/transport"
	"github.com/xdslens/xdslens/xdsclient/internal/txn"
)

// quiet is an Observer that hears nothing: no hook is installed.
type quiet struct{}

func (quiet) StateChanged(*txn.Tx, *cache.Entry, cache.State, bool)                       {}
func (quiet) TimerStarted(*txn.Tx, *cache.Entry, *cache.Source)                           {}
func (quiet) TimerStopped(*txn.Tx, *cache.Entry, *cache.Source)                           {}
func (quiet) Logged(*txn.Tx, *cache.Entry, *cache.Source, cache.Log, string)              {}
func (quiet) Applied(*txn.Tx, *cache.Source, string, string, string, bool, cache.Applied) {}

// BenchmarkApply is the cache's own share of a State of the World update
// of n clusters, each watched once, without a server: every cluster
// changes (all), or one does (one), from one response to the next.
func BenchmarkApply(b *testing.B) {
	const n = 10000
	for _, all := range []bool{true, false} {
		name := "one"
		if all {
			name = "all"
		}
		b.Run(name, func(b *testing.B) {
			// Two versions of every cluster, which differ in their connect
			// timeout; with all unset, only the first cluster changes.
			var versions [2][]transport.Resource
			for v := range versions {
				versions[v] = make([]transport.Resource, n)
				for i := range n {
					c := controlplane.Cluster("c"+strconv.Itoa(i), "")
					if all || i == 0 {
						c.ConnectTimeout = durationpb.New(time.Duration(v+1) * time.Second)
					}
					raw, err := proto.Marshal(c)
					if err != nil {
						b.Fatal(err)
					}
					versions[v][i] = transport.Resource{Value: raw}
				}
			}
			f := newClusters(b, n, func(d cache.Delivery) any { return d.Value }, func(*cache.Watcher, any, error, bool) {})
			c, src, k := f.c, f.src, f.k
			open := func(*txn.Tx) bool { return true }
			apply := func(v int) {
				u := &transport.Update{TypeURL: k.Type.TypeURL(), Version: strconv.Itoa(v), Resources: versions[v%2], Known: true, Subscribed: n}
				a, ok := c.Apply(src, u, open)
				if !ok || a.Valid != n || a.NACK != nil {
					b.Fatalf("update %d: %+v, applied %v", v, a, ok)
				}
				<-a.Wait
			}
			apply(0)
			b.ReportAllocs()
			v := 1
			for b.Loop() {
				apply(v)
				v++
			}
		})
	}
}
