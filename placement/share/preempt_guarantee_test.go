package share

import (
	"math/rand/v2"
	"testing"
)

// On random clusters with guarantees (that fit the capacity) and
// executors of every size: what a queue below its guarantee takes from
// another leaves that queue at or above its own guarantee once the room
// free after the plan (what was, and what the preemption freed and the
// needs do not use) is counted back to it: it is free for its next round,
// in which that queue, below its guarantee, comes first; only preemptible
// queues give; a queue below its guarantee gives nothing to another's
// guarantee; no executor twice.
func TestPlanPropertiesWithGuarantees(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	for trial := range 1000 {
		nq, nw := 2+rng.IntN(3), 1+rng.IntN(5)
		c := Cluster{Capacity: Vec{float64(nw * 8), float64(nw * 32)}, Free: make([]Vec, nw)}
		for w := range c.Free {
			c.Free[w] = Vec{float64(rng.IntN(2)), float64(rng.IntN(8))}
		}
		c.Queues = make([]QueueState, nq)
		room := float64(nw * 8)
		for q := range c.Queues {
			g := float64(rng.IntN(int(room)/2 + 1))
			room -= g
			c.Queues[q] = QueueState{Usage: Zero(2), Fair: Vec{g, 0}, Guarantee: Vec{g, 0}, Preempt: rng.IntN(5) != 0}
		}
		for w := range nw {
			left := 8 - int(c.Free[w][0])
			for left > 0 {
				q := rng.IntN(nq)
				size := min(left, []int{1, 2, 4, 8}[rng.IntN(4)]) // fixed sizes, and whole workers
				use := Vec{float64(size), float64(1 + rng.IntN(4))}
				left -= size
				c.Running = append(c.Running, Running{Queue: q, Priority: rng.IntN(2), Worker: w, Shape: len(c.Shapes), Started: rng.Int64N(1000)})
				c.Shapes = append(c.Shapes, use)
				c.Queues[q].Usage = c.Queues[q].Usage.Add(use)
			}
		}
		var needs []Need
		for q := range c.Queues {
			if DominantShare(c.Queues[q].Usage, c.Capacity) < DominantShare(c.Queues[q].Guarantee, c.Capacity)-1e-9 {
				needs = append(needs, Need{Queue: q, Shape: Vec{float64(1 + rng.IntN(2)), 1}, Count: 1 + rng.IntN(4), Guaranteed: true})
			}
		}
		victims := Plan(c, needs)
		usage := make([]Vec, nq)
		for q := range usage {
			usage[q] = c.Queues[q].Usage
		}
		freed, used := Zero(2), Zero(2)
		gave := map[int]bool{}
		seen := map[int]bool{}
		for i, v := range victims {
			r, n := c.Running[v.Executor], needs[v.Need]
			if seen[v.Executor] {
				t.Fatalf("trial %d: executor %d taken twice", trial, v.Executor)
			}
			seen[v.Executor] = true
			if !c.Queues[r.Queue].Preempt {
				t.Fatalf("trial %d: took from queue %d, which refuses preemption", trial, r.Queue)
			}
			if r.Queue != n.Queue {
				gave[r.Queue] = true
				if DominantShare(usage[r.Queue], c.Capacity) < DominantShare(c.Queues[r.Queue].Guarantee, c.Capacity)-1e-9 { // as the plan has it so far
					t.Fatalf("trial %d: queue %d, below its own guarantee, gave to queue %d\ncluster %+v\nneeds %+v\nvictims %+v", trial, r.Queue, n.Queue, c, needs, victims)
				}
			}
			usage[r.Queue] = usage[r.Queue].Sub(c.Use(v.Executor))
			freed = freed.Add(c.Use(v.Executor))
			if i == len(victims)-1 || victims[i+1].Unit != v.Unit {
				usage[n.Queue] = usage[n.Queue].Add(n.Shape)
				used = used.Add(n.Shape)
			}
		}
		back := freed.Sub(used) // free after the plan: what was, what it frees, less what the needs take
		for _, f := range c.Free {
			back = back.Add(f)
		}
		for q := range gave {
			if got := DominantShare(usage[q].Add(back), c.Capacity); got < DominantShare(c.Queues[q].Guarantee, c.Capacity)-1e-9 {
				t.Fatalf("trial %d: queue %d left at %v (%v with what was freed and not used), below its guarantee %v\ncluster %+v\nneeds %+v\nvictims %+v", trial, q, usage[q], usage[q].Add(back), c.Queues[q].Guarantee, c, needs, victims)
			}
		}
	}
}
