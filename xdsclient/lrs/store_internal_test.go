package lrs

import (
	"errors"
	"testing"
	"time"
)

func TestRestoreGivesBackEveryCount(t *testing.T) {
	made := time.Now()
	s := NewStore()
	l := s.Cluster("c", "svc")
	loc := Locality{Region: "r"}
	l.CallStarted(loc)
	l.CallStarted(loc)
	l.CallFinished(loc, nil)
	l.CallServerLoad(loc, "qps", 2)
	l.CallDropped("x")
	l.CallDropped("")
	start := time.Now()
	first := s.take(nil, true, start.Add(time.Second))
	if len(first) != 1 {
		t.Fatalf("take = %d clusters, want 1", len(first))
	}
	// The write failed: everything goes back, and the next report covers
	// both periods.
	s.restore(first)
	l.CallFinished(loc, errors.New("x"))
	second := s.take(nil, true, start.Add(3*time.Second))
	if len(second) != 1 {
		t.Fatalf("take after restore = %d clusters, want 1", len(second))
	}
	c := second[0]
	ls := c.localities[0]
	if ls.issued != 2 || ls.succeeded != 1 || ls.errored != 1 || ls.inProgress != 0 {
		t.Errorf("locality counts = %+v, want 2 issued, 1 succeeded, 1 errored, none in progress", ls)
	}
	if m := ls.metrics["qps"]; m.count != 1 || m.sum != 2 {
		t.Errorf("qps = %+v, want count 1 sum 2", m)
	}
	if c.totalDrops != 2 || c.drops["x"] != 1 {
		t.Errorf("drops = %d total, %v; want 2 total, x: 1", c.totalDrops, c.drops)
	}
	if c.interval < 3*time.Second || c.interval > 3*time.Second+start.Sub(made) {
		t.Errorf("interval = %v, want the time since the store was made (about 3s)", c.interval)
	}
	if third := s.take(nil, true, start.Add(4*time.Second)); len(third) != 0 {
		t.Errorf("a third take = %+v, want nothing left", third)
	}
}

// A call taken back with CallNotStarted counts neither as issued nor in
// progress; one taken back after a report counted it is counted off the
// next reports, never below zero in one, so that the sums are exact.
func TestCallNotStartedIsTakenBack(t *testing.T) {
	s := NewStore()
	l := s.Cluster("c", "svc")
	loc := Locality{Zone: "z"}
	now := time.Now()
	take := func() localitySnapshot {
		t.Helper()
		now = now.Add(time.Second)
		snaps := s.take(nil, true, now)
		if len(snaps) == 0 {
			return localitySnapshot{}
		}
		if len(snaps) != 1 || len(snaps[0].localities) != 1 {
			t.Fatalf("take = %+v, want one cluster of one locality", snaps)
		}
		return snaps[0].localities[0]
	}
	l.CallStarted(loc)
	l.CallNotStarted(loc)
	if ls := take(); ls.issued != 0 || ls.inProgress != 0 {
		t.Errorf("a call taken back before a report: %+v, want nothing issued or in progress", ls)
	}
	l.CallStarted(loc)
	if ls := take(); ls.issued != 1 || ls.inProgress != 1 {
		t.Fatalf("a call started: %+v, want 1 issued, 1 in progress", ls)
	}
	l.CallNotStarted(loc)
	if ls := take(); ls.issued != 0 || ls.inProgress != 0 {
		t.Errorf("the call taken back after the report: %+v, want 0 issued, none in progress", ls)
	}
	l.CallStarted(loc)
	l.CallStarted(loc)
	l.CallFinished(loc, nil)
	l.CallFinished(loc, nil)
	if ls := take(); ls.issued != 1 || ls.succeeded != 2 || ls.inProgress != 0 {
		t.Errorf("two calls after it: %+v, want 1 issued (2 less the one taken back), 2 succeeded", ls)
	}
	l.CallNotStarted(Locality{Zone: "never seen"}) // ignored, as CallFinished there
	if ls := take(); ls.ll != nil {
		t.Errorf("a last take: %+v, want nothing to report", ls)
	}
}
