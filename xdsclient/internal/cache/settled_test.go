package cache

import "testing"

// A resource a response carries with the bytes a settled entry holds is
// applied on the spot (response.resource) rather than decided and carried
// out: for every entry settled reports, under every set of features,
// transition's outcome changes nothing that carryOut would act on but the
// update that last carried the bytes. Entries it does not report may need
// more (a watcher told of an ambient error hears that it ended).
func TestSettledUnchanged(t *testing.T) {
	settled := 0
	for state := StateRequested; state <= StateTimeout; state++ {
		for bits := range 1 << 7 {
			e := &Entry{state: state}
			if bits&1 != 0 {
				e.res = held{raw: []byte("r"), from: &update{}}
			}
			for i, f := range []entryFlags{flagDeletionIgnored, flagTiming, flagExtra, flagFirstWatching} {
				e.set(f, bits&(2<<i) != 0)
			}
			e.first.heardAmbient = bits&32 != 0
			if !e.settled() {
				continue
			}
			settled++
			for fbits := range 1 << 4 {
				f := features{legacy: fbits&1 != 0, failOnDataErrors: fbits&2 != 0, ignoreDeletion: fbits&4 != 0, transientTimer: fbits&8 != 0}
				out := transition(e.current(), event{kind: evValid, unchanged: true}, f)
				if out.state != e.state || out.resource != keepResource || out.startTimer || out.deletionIgnored || out.logIgnored || out.logUnignored {
					t.Fatalf("state %v flags %b: outcome %+v changes the entry", state, e.flags, out)
				}
				if out.failure == recordFailure || (out.failure == clearFailure && e.failure() != nil) {
					t.Fatalf("state %v flags %b: outcome %+v changes the failure", state, e.flags, out)
				}
				heard := e.is(flagFirstWatching) && e.first.heardAmbient
				if out.notify != notifyNone && !(out.notify == notifyCleared && !heard && !e.is(flagExtra)) {
					t.Fatalf("state %v flags %b: outcome %+v tells a watcher", state, e.flags, out)
				}
				if out.stopTimer && e.is(flagTiming) {
					t.Fatalf("state %v flags %b: outcome %+v stops a running timer", state, e.flags, out)
				}
			}
		}
	}
	if settled == 0 {
		t.Fatal("no entry is settled")
	}
}
