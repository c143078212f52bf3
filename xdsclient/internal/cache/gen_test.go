package cache

import (
	"math"
	"testing"

	"github.com/xdslens/xdslens/xdsclient/internal/txn"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"
)

// nopObserver hears the cache's events and does nothing.
type nopObserver struct{}

func (nopObserver) StateChanged(*txn.Tx, *Entry, State, bool)                       {}
func (nopObserver) TimerStarted(*txn.Tx, *Entry, *Source)                           {}
func (nopObserver) TimerStopped(*txn.Tx, *Entry, *Source)                           {}
func (nopObserver) Logged(*txn.Tx, *Entry, *Source, Log, string)                    {}
func (nopObserver) Applied(*txn.Tx, *Source, string, string, string, bool, Applied) {}

// Responses are numbered in 32 bits: when the numbers wrap around, no
// entry seems named by the response numbered after the wrap (which would
// make it a duplicate in that response, or not absent from it).
func TestResponseNumbersWrap(t *testing.T) {
	mu := new(txn.Mutex)
	c := New(Config{Mutex: mu, Observer: nopObserver{}})
	tx := mu.Lock()
	defer tx.Unlock()
	k, err := c.Register(tx, Describe(xdsresource.ClusterType))
	if err != nil {
		t.Fatal(err)
	}
	g := NewGroup(tx, "#old", c.NewSource())
	never := c.Add(tx, k, "never-named", g)
	long := c.Add(tx, k, "named-long-ago", g)
	long.seenGen = 1
	c.s.Of(tx).gen = math.MaxUint32 - 1
	for range 3 {
		gen := c.nextGen(tx)
		for _, e := range []*Entry{never, long} {
			if e.seenGen == gen {
				t.Fatalf("after the wrap, %s seems named by response %d", e.name, gen)
			}
		}
	}
}
