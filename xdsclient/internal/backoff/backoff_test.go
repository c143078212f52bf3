package backoff

import (
	"testing"
	"time"
)

func TestDelayGrowsWithinJitterAndCaps(t *testing.T) {
	want := []float64{1, 1.6, 2.56, 4.096, 6.5536}
	for i, w := range want {
		for n := 0; n < 200; n++ {
			got := Default.Delay(i).Seconds()
			if got < w*0.8-1e-9 || got > w*1.2+1e-9 {
				t.Fatalf("Delay(%d) = %vs, want within ±20%% of %vs", i, got, w)
			}
		}
	}
	for n := 0; n < 200; n++ {
		if got := Default.Delay(1000); got > 144*time.Second || got < 96*time.Second {
			t.Fatalf("Delay(1000) = %v, want 120s ±20%%", got)
		}
	}
}

func TestDelaySpreads(t *testing.T) {
	seen := map[time.Duration]bool{}
	for n := 0; n < 50; n++ {
		seen[Default.Delay(3)] = true
	}
	if len(seen) < 10 {
		t.Fatalf("50 delays gave only %d distinct values; jitter is not applied", len(seen))
	}
}
