package main

// Monte Carlo sampling with a generator of our own (splitmix64): a task's
// result must depend on its seed alone, whichever executor computes it,
// however many times, and on whichever Go version built the binary.

const golden = 0x9E3779B97F4A7C15 // splitmix64's increment

// mix is splitmix64's output function.
func mix(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
	z = (z ^ (z >> 27)) * 0x94D049BB133111EB
	return z ^ (z >> 31)
}

// Task is one unit of work: count the points of a seeded sample that fall
// inside the quarter circle.
type Task struct {
	ID      int    `json:"id"`
	Seed    uint64 `json:"seed"`
	Samples int64  `json:"samples"`
}

// makeTasks returns n tasks of samples points; task i's seed is the i-th
// output of a splitmix64 stream started at jobSeed, so seeds are distinct
// and far apart.
func makeTasks(n int, samples int64, jobSeed uint64) []Task {
	tasks := make([]Task, n)
	for i := range tasks {
		tasks[i] = Task{ID: i, Seed: mix(jobSeed + uint64(i+1)*golden), Samples: samples}
	}
	return tasks
}

// countInside draws t.Samples points uniformly in the unit square and
// returns how many fall inside the quarter circle. The state stays in a
// local variable so the loop runs in registers.
func countInside(t Task) int64 {
	s := t.Seed
	var inside int64
	for range t.Samples {
		s += golden
		x := float64(mix(s)>>11) * 0x1p-53
		s += golden
		y := float64(mix(s)>>11) * 0x1p-53
		if x*x+y*y <= 1 {
			inside++
		}
	}
	return inside
}

// estimate is Pi from the points inside out of all points. Integer sums make
// it independent of the order in which results came in.
func estimate(inside, samples int64) float64 {
	return 4 * float64(inside) / float64(samples)
}
