package placement_test

import (
	"testing"

	"github.com/berth-cluster/berth/placement"
)

// The step of an app's next executor: its fixed size, else the core unit
// (one core for a unit of 0 or less), no more than the cores it wants.
func TestExecutorStep(t *testing.T) {
	for _, c := range []struct{ perExecutor, unit, left, want int }{
		{2, 4, 1, 2},  // a fixed size wins, whatever is left
		{0, 4, 10, 4}, // the unit
		{0, 4, 3, 3},  // no more than it wants
		{0, 0, 10, 1}, // Spark's step
		{0, -1, 5, 1},
		{0, 4, 0, 0}, // it wants nothing
	} {
		if got := placement.ExecutorStep(c.perExecutor, c.unit, c.left); got != c.want {
			t.Errorf("ExecutorStep(%d, %d, %d) = %d, want %d", c.perExecutor, c.unit, c.left, got, c.want)
		}
	}
}
