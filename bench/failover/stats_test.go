package failover

import (
	"slices"
	"testing"
	"time"
)

func TestSlowRounds(t *testing.T) {
	const ms = time.Millisecond
	ds := []time.Duration{2000 * ms, 2100 * ms, 1900 * ms, 2050 * ms, 4500 * ms, 2000 * ms, 9000 * ms}
	// median 2050: limit max(4100, 3050) = 4100.
	if got := slowRounds(ds, 0); !slices.Equal(got, []int{4, 6}) {
		t.Errorf("slow = %v", got)
	}
	if got := slowRounds(ds, 5*time.Second); !slices.Equal(got, []int{6}) {
		t.Errorf("slow over 5s = %v", got)
	}
	// Short rounds: a second above the median is needed, not just twice it.
	if got := slowRounds([]time.Duration{100 * ms, 120 * ms, 250 * ms, 110 * ms}, 0); got != nil {
		t.Errorf("slow among short rounds = %v", got)
	}
	if slowRounds(nil, 0) != nil {
		t.Error("slow rounds of nothing")
	}
}
