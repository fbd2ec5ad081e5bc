package scheduler

import "testing"

func TestSizesHoldBothOnOneWorker(t *testing.T) {
	var s sizes
	s.add(3, 1024)
	s.add(1, 8192)
	s.add(2, 512) // held by (3, 1024): off the frontier
	for _, c := range []struct {
		cores, memory int
		want          bool
	}{{3, 1024, true}, {1, 8000, true}, {3, 1500, false}, {2, 2048, false}, {4, 1, false}, {1, 1, true}} {
		if got := s.holds(c.cores, c.memory); got != c.want {
			t.Errorf("holds(%d cores, %d MB) = %v, want %v", c.cores, c.memory, got, c.want)
		}
	}
	var none sizes
	if none.holds(1, 1) {
		t.Error("no worker holds something")
	}
}
