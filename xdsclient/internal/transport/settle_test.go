package transport

import "testing"

// settle lets a burst of subscriptions end before requests are made: it
// waits while they change, a step at a time, for at most settleMax; with
// nothing subscribed since the last requests (an ACK) or a single change
// that no other follows, it does not wait.
func TestSettle(t *testing.T) {
	maxSteps := int(settleMax / settleStep)
	for _, tc := range []struct {
		name      string
		before    uint64 // changes already counted when settle is called
		built     uint64 // changes the last requests carried
		burst     int    // steps during which subscriptions keep changing
		wantSteps int
	}{
		{name: "ACK only", before: 5, built: 5, wantSteps: 0},
		{name: "one subscription", before: 6, built: 5, wantSteps: 0},
		{name: "burst of 3 steps", before: 6, built: 5, burst: 3, wantSteps: 4},
		{name: "burst that does not end", before: 6, built: 5, burst: 1000, wantSteps: maxSteps},
		{name: "stream ends", before: 6, built: 5, burst: 1000, wantSteps: -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &Conn{}
			c.changes.Store(tc.before)
			yields := 0
			yield := func() {
				if yields++; tc.burst > 0 && yields == settleYields/2 {
					c.changes.Add(1) // during the yields: a burst is under way
				}
			}
			steps := 0
			step := func() bool {
				steps++
				if tc.wantSteps < 0 && steps == 2 {
					return false
				}
				if steps <= tc.burst {
					c.changes.Add(7)
				}
				return true
			}
			got := c.settle(tc.built, yield, step)
			want := tc.wantSteps
			if want < 0 {
				want = 2
			}
			if steps != want {
				t.Errorf("settle waited %d steps, want %d", steps, want)
			}
			if wantYields := min(settleYields, int(tc.before-tc.built)*settleYields); yields != wantYields {
				t.Errorf("settle yielded %d times, want %d", yields, wantYields)
			}
			if got != c.changes.Load() {
				t.Errorf("settle returned %d, want the count of changes %d", got, c.changes.Load())
			}
		})
	}
}
