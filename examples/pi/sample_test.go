package main

import (
	"math"
	"sync"
	"testing"
)

// directEstimate computes the job's estimate from its task seeds alone, in
// parallel: what the cluster must print whoever computed which task.
func directEstimate(tasks []Task) (inside, samples int64) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, t := range tasks {
		wg.Go(func() {
			n := countInside(t)
			mu.Lock()
			inside += n
			samples += t.Samples
			mu.Unlock()
		})
	}
	wg.Wait()
	return inside, samples
}

func TestDefaultsEstimatePi(t *testing.T) {
	inside, samples := directEstimate(makeTasks(200, 200000, 42))
	if got := estimate(inside, samples); math.Abs(got-math.Pi) > 0.01 {
		t.Fatalf("estimate %f from the defaults, more than 0.01 from Pi", got)
	}
}

func TestTasksAreDeterministic(t *testing.T) {
	a, b := makeTasks(5, 1000, 7), makeTasks(5, 1000, 7)
	seen := map[uint64]bool{}
	for i := range a {
		if a[i] != b[i] || countInside(a[i]) != countInside(b[i]) {
			t.Fatalf("task %d differs between two runs", i)
		}
		if seen[a[i].Seed] {
			t.Fatalf("task %d repeats a seed", i)
		}
		seen[a[i].Seed] = true
	}
	if makeTasks(1, 1000, 8)[0].Seed == a[0].Seed {
		t.Fatal("the job seed does not change the task seeds")
	}
}
