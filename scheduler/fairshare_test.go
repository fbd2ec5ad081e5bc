package scheduler

import (
	"testing"
	"time"

	"github.com/berth-cluster/berth/wire"
)

// Two queues of weights 3 and 1 share one 8-core worker 6 and 2 by their
// weighted dominant shares (QUEUES.md, example b); equal weights 4 and 4;
// a queue alone takes everything.
func TestQueuesShareByWeightedDominantShare(t *testing.T) {
	for _, c := range []struct {
		name         string
		wa, wb       float64
		wantA, wantB int
		alone        bool
	}{{"weights 3 and 1", 3, 1, 6, 2, false}, {"equal weights", 1, 1, 4, 4, false}, {"a alone", 1, 1, 8, 0, true}} {
		t.Run(c.name, func(t *testing.T) {
			cl := newCluster(t)
			cl.worker("w1", 8, 8192)
			cl.queue("a", c.wa)
			cl.queue("b", c.wb)
			cl.app("A", "a", 0, 0, 100)
			if !c.alone {
				cl.app("B", "b", 0, 0, 100)
			}
			p := cl.schedule()
			if got := launched(p); got["A"] != c.wantA || got["B"] != c.wantB {
				t.Errorf("launches %v, want A %d and B %d", got, c.wantA, c.wantB)
			}
			if p.Outcome != Scheduled {
				t.Errorf("outcome %v, want Scheduled", p.Outcome)
			}
			if !c.alone {
				if fair := p.Queues["a"].Fair.Cores; fair != c.wantA {
					t.Errorf("queue a's fair share: %d cores, want %d", fair, c.wantA)
				}
			}
		})
	}
}

// A guarantee is served first; a limit caps a queue, and its apps say so
// (QUEUES.md, example c): etl (guaranteed 6 cores) gets 7, adhoc (limited
// to 1) gets 1.
func TestGuaranteesAndLimits(t *testing.T) {
	cl := newCluster(t)
	cl.worker("w1", 8, 8192)
	cl.queue("etl", 1).Guarantee = wire.Amount{Cores: 6}
	cl.queue("adhoc", 1).Limit = &wire.Amount{Cores: 1}
	cl.app("E", "etl", 0, 0, 100)
	cl.app("H", "adhoc", 0, 0, 100)
	p := cl.schedule()
	if got := launched(p); got["E"] != 7 || got["H"] != 1 {
		t.Errorf("launches %v, want etl's app 7 and adhoc's 1", got)
	}
	if held := p.Queues["adhoc"].Held; held != "queue adhoc at its limit (cores 1)" {
		t.Errorf("adhoc held for %q", held)
	}
	if fair := p.Queues["etl"].Fair.Cores; fair != 7 {
		t.Errorf("etl's fair share %d cores, want 7", fair)
	}
	sv := cl.status(true, p)
	if why := sv.AppWaiting(&cl.apps[1].App); why != "waiting: queue adhoc at its limit (cores 1)" {
		t.Errorf("adhoc's app says %q", why)
	}
}

// A round where nothing waits settles: nothing owed, each queue's use as
// it is.
func TestNothingWaitingSettles(t *testing.T) {
	cl := newCluster(t)
	cl.worker("w1", 8, 8192)
	a := cl.app("A", wire.DefaultQueue, 0, 2, 100)
	cl.run(a, "w1")
	cl.run(a, "w1")
	cl.queues[wire.DefaultQueue].StarvedSince = t0.Add(-time.Minute)
	p := cl.schedule()
	if p.Outcome != Settled || p.Owing || len(p.Launches) != 0 {
		t.Fatalf("plan %+v, want a settled round", p)
	}
	if q := p.Queues[wire.DefaultQueue]; q.Usage.Cores != 2 || !q.StarvedSince.IsZero() || q.Held != "" {
		t.Errorf("default queue %+v: want 2 cores in use, not starved, not held", q)
	}
}

// No worker: nothing is decided, and the master keeps what it knew.
func TestNoWorkerDecidesNothing(t *testing.T) {
	cl := newCluster(t)
	cl.app("A", wire.DefaultQueue, 0, 0, 100)
	if p := cl.schedule(); p.Outcome != Idle || len(p.Queues) != 0 {
		t.Errorf("plan %+v without a worker, want Idle", p)
	}
}

// Pass 2 gives what the owed could not use to whoever still wants it:
// queue a's app asks for 2 cores only, b's app takes the other 6.
func TestWorkConservingSecondPass(t *testing.T) {
	cl := newCluster(t)
	cl.worker("w1", 8, 8192)
	cl.queue("a", 1)
	cl.queue("b", 1)
	cl.app("A", "a", 0, 2, 100)
	cl.app("B", "b", 0, 0, 100)
	if got := launched(cl.schedule()); got["A"] != 2 || got["B"] != 6 {
		t.Errorf("launches %v, want A 2 and B 6", got)
	}
}
