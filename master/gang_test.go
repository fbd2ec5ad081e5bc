package master

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/berth-cluster/berth/admission"
	"github.com/berth-cluster/berth/wire"
)

func gangApp(n, cores int, restart bool) wire.AppDescription {
	return wire.AppDescription{MaxCores: n * cores, CoresPerExecutor: cores, MemoryPerExecutorMB: 100, Gang: n, GangRestart: restart}
}

// A gang that the cluster cannot hold whole starts nothing and says why;
// once a worker joins, all of it starts in one round.
func TestGangStartsWholeOrNotAtAll(t *testing.T) {
	h := newLeader(t, nil, "w1") // 4 cores: two executors of 2
	a := h.addApp(gangApp(3, 2, false))
	h.commit()
	if n := len(a.executors); n != 0 {
		t.Fatalf("a gang of 3 on room for 2: %d executors started", n)
	}
	st, _ := h.c.app(a.rec.ID)
	wantWaiting(t, "gang", st.Waiting, "gang of 3 executors", "whole or not at all", "could not hold all of them even empty", "nothing is held for it")
	if st.Gang != 3 {
		t.Errorf("status gang %d", st.Gang)
	}
	small := h.addApp(wire.AppDescription{MaxCores: 2, CoresPerExecutor: 1, MemoryPerExecutorMB: 100})
	h.commit()
	if len(small.executors) != 2 {
		t.Fatalf("a small app beside the waiting gang got %d executors", len(small.executors))
	}
	h.addWorker("w2", 4, 4096)
	h.addWorker("w3", 4, 4096)
	h.commit()
	if got := layout(a); len(got) != 3 {
		t.Fatalf("the gang once there is room: %v", got)
	}
}

// A member lost later is replaced alone; the others keep running.
func TestGangMemberReplacedAlone(t *testing.T) {
	h := newLeader(t, nil, "w1", "w2")
	a := h.addApp(gangApp(2, 2, false))
	h.commit()
	es := executors(a)
	if len(es) != 2 {
		t.Fatalf("gang placed %d", len(es))
	}
	for _, e := range es {
		h.report(e, wire.ExecutorRunning, nil)
	}
	h.takeSent(wire.WorkerAPI.KillExecutor.Pattern)
	one := 1
	h.report(es[0], wire.ExecutorFailed, &one)
	h.pass(30*time.Second, "w1", "w2") // past the relaunch backoff of an executor that ended soon after starting
	if kills := h.takeSent(wire.WorkerAPI.KillExecutor.Pattern); len(kills) != 0 {
		t.Errorf("the other member was killed: %+v", kills)
	}
	if _, ok := a.executors[es[1].id]; !ok {
		t.Error("the other member is gone")
	}
	if len(a.executors) != 2 {
		t.Errorf("after one member failed: %d executors, want it replaced (2)", len(a.executors))
	}
}

// With gangRestart, a member's end kills the others, and the gang is
// placed again whole once they are gone.
func TestGangRestartReplacesTheWholeGang(t *testing.T) {
	h := newLeader(t, nil, "w1", "w2")
	a := h.addApp(gangApp(2, 2, true))
	h.commit()
	es := executors(a)
	if len(es) != 2 {
		t.Fatalf("gang placed %d", len(es))
	}
	for _, e := range es {
		h.report(e, wire.ExecutorRunning, nil)
	}
	h.takeSent(wire.WorkerAPI.KillExecutor.Pattern)
	one := 1
	h.report(es[0], wire.ExecutorFailed, &one)
	h.commit()
	if kills := h.takeSent(wire.WorkerAPI.KillExecutor.Pattern); len(kills) != 1 {
		t.Fatalf("kills after a member failed: %+v, want the other member's", kills)
	}
	h.pass(30*time.Second, "w1", "w2") // past the relaunch backoff
	if len(a.executors) != 2 || a.gangRestarting {
		t.Fatalf("after the restart: %d executors (%v), restarting %v; want a new gang of 2", len(a.executors), layout(a), a.gangRestarting)
	}
	for _, e := range executors(a) {
		if e.id == es[0].id || e.id == es[1].id {
			t.Errorf("executor %d of the old gang still counted", e.id)
		}
	}
}

// A gang that has waited --gang-reserve-after holds back the apps behind
// it: capacity that frees goes to it, not to a stream of small apps.
func TestGangReservationStopsStarvation(t *testing.T) {
	h := newLeader(t, func(c *Config) { c.GangReserveAfter = 5 * time.Second }, "w1", "w2") // 4 cores each (and apps without a client live 60 s here)
	first := h.addApp(wire.AppDescription{MaxCores: 4, CoresPerExecutor: 4, MemoryPerExecutorMB: 100})
	h.commit()
	for _, e := range executors(first) {
		h.report(e, wire.ExecutorRunning, nil)
	}
	gang := h.addApp(gangApp(2, 4, false)) // needs both workers whole
	h.commit()
	early := h.addApp(wire.AppDescription{MaxCores: 1, CoresPerExecutor: 1, MemoryPerExecutorMB: 100})
	h.commit()
	if len(early.executors) != 1 {
		t.Fatalf("before the reservation a small app runs beside the waiting gang: %d executors", len(early.executors))
	}
	h.pass(6*time.Second, "w1", "w2")
	if _, err := run(h, func(reply reply[wire.AppStatus]) { h.c.endApp(first.rec.ID, wire.AppFinished, "done", reply) }); err != nil {
		t.Fatal(err)
	}
	late := h.addApp(wire.AppDescription{MaxCores: 1, CoresPerExecutor: 1, MemoryPerExecutorMB: 100})
	h.commit()
	if len(late.executors) != 0 {
		t.Fatalf("a small app took freed capacity the waiting gang holds: %v", layout(late))
	}
	st, _ := h.c.app(late.rec.ID)
	wantWaiting(t, "held", st.Waiting, "held for gang app "+gang.rec.ID)
	gs, _ := h.c.app(gang.rec.ID)
	wantWaiting(t, "reserving", gs.Waiting, "capacity is held for it as it frees")
	for _, e := range executors(early) {
		h.report(e, wire.ExecutorRunning, nil)
	}
	if _, err := run(h, func(reply reply[wire.AppStatus]) { h.c.endApp(early.rec.ID, wire.AppFinished, "done", reply) }); err != nil {
		t.Fatal(err)
	}
	h.commit()
	if len(gang.executors) != 2 {
		t.Fatalf("the gang once both workers freed: %v", layout(gang))
	}
	if len(late.executors) != 0 {
		t.Errorf("the small app took a worker before the gang: %v", layout(late))
	}
}

// A gang that could never fit holds nobody back.
func TestGangThatCannotFitHoldsNobody(t *testing.T) {
	h := newLeader(t, func(c *Config) { c.GangReserveAfter = time.Second }, "w1")
	h.addApp(gangApp(3, 4, false))
	h.pass(2*time.Second, "w1")
	small := h.addApp(wire.AppDescription{MaxCores: 1, CoresPerExecutor: 1, MemoryPerExecutorMB: 100})
	h.commit()
	if len(small.executors) != 1 {
		t.Errorf("a gang too large for the cluster held a small app back: %d executors", len(small.executors))
	}
}

func TestGangBadInputRefused(t *testing.T) {
	four := 1
	for _, d := range []wire.AppDescription{
		{Gang: 2}, // no fixed executor size
		{Gang: 2, CoresPerExecutor: 2, MaxCores: 2},                 // maxCores below the gang
		{GangRestart: true, CoresPerExecutor: 1},                    // restart without a gang
		{Gang: -1, CoresPerExecutor: 1},                             // negative
		{Gang: admission.MaxGang + 1, CoresPerExecutor: 1},          // too large
		{Gang: 2, CoresPerExecutor: 1, InitialExecutorLimit: &four}, // the limit keeps it from ever starting
	} {
		d.Command = []string{"x"}
		if err := admission.App(d); err == nil {
			t.Errorf("%+v accepted", d)
		}
	}
}

// Property: whatever apps arrive, end and fail on whatever workers, no
// round ever starts part of a gang: a gang app has no executor or at
// least its N after every round in which it had none.
func TestGangNeverStartsPartially(t *testing.T) {
	formed := 0
	defer func() {
		if formed == 0 {
			t.Error("no gang was ever placed: the property was not tried")
		}
	}()
	for seed := range uint64(30) {
		r := rand.New(rand.NewPCG(seed, 7))
		h := newLeader(t, func(c *Config) { c.GangReserveAfter = time.Duration(1+r.IntN(3)) * time.Second })
		for i := range 1 + r.IntN(5) {
			h.addWorker(fmt.Sprintf("w%d", i), 1+r.IntN(8), 4096)
		}
		var apps []*appInfo
		for step := range 60 {
			before := map[*appInfo]int{} // a new app: 0
			for _, a := range apps {
				before[a] = len(a.executors)
			}
			switch r.IntN(5) {
			case 0:
				apps = append(apps, h.addApp(gangApp(1+r.IntN(6), 1+r.IntN(3), r.IntN(2) == 0)))
			case 1:
				apps = append(apps, h.addApp(wire.AppDescription{MaxCores: 1 + r.IntN(6), CoresPerExecutor: 1, MemoryPerExecutorMB: 100}))
			case 2:
				if len(apps) > 0 {
					a := apps[r.IntN(len(apps))]
					if es := executors(a); len(es) > 0 && !a.state.Finished() {
						code := 1
						h.report(es[r.IntN(len(es))], wire.ExecutorFailed, &code)
					}
				}
			case 3:
				if len(apps) > 0 {
					a := apps[r.IntN(len(apps))]
					if !a.state.Finished() && a.ending == nil {
						run(h, func(reply reply[wire.AppStatus]) { h.c.endApp(a.rec.ID, wire.AppFinished, "done", reply) })
					}
				}
			case 4:
				h.pass(time.Second)
			}
			h.commit()
			for _, a := range apps {
				n := a.rec.Desc.Gang
				if n > 0 && before[a] == 0 && len(a.executors) > 0 {
					if len(a.executors) < n {
						t.Fatalf("seed %d step %d: gang of %d started with %d executors: %v", seed, step, n, len(a.executors), layout(a))
					}
					formed++
				}
			}
		}
	}
}

// Property: under a stream of small apps that keep every worker partly
// busy, a gang that needs every worker whole is placed once it has waited
// --gang-reserve-after and the small apps running then have ended.
func TestGangPlacedUnderAStreamOfSmallApps(t *testing.T) {
	for seed := range uint64(10) {
		r := rand.New(rand.NewPCG(seed, 11))
		h := newLeader(t, func(c *Config) { c.GangReserveAfter = 5 * time.Second }, "w1", "w2", "w3") // 4 cores each
		gang := h.addApp(gangApp(3, 4, false))
		type small struct {
			a   *appInfo
			end time.Time
		}
		var running []small
		placedAt := time.Duration(-1)
		for tick := range 60 { // 30 s of half-second ticks
			now := h.clock.t
			kept := running[:0]
			for _, s := range running {
				if !now.Before(s.end) {
					run(h, func(reply reply[wire.AppStatus]) { h.c.endApp(s.a.rec.ID, wire.AppFinished, "done", reply) })
					continue
				}
				kept = append(kept, s)
			}
			running = kept
			for range 1 + r.IntN(2) { // a new small app or two every tick
				a := h.addApp(wire.AppDescription{MaxCores: 1, CoresPerExecutor: 1, MemoryPerExecutorMB: 100})
				running = append(running, small{a, now.Add(time.Duration(1+r.IntN(4)) * time.Second)})
			}
			h.commit()
			if len(gang.executors) > 0 && placedAt < 0 {
				placedAt = time.Duration(tick) * 500 * time.Millisecond
			}
			h.pass(500*time.Millisecond, "w1", "w2", "w3")
		}
		// Reserved after 5 s, then at most 4 s for the small apps then
		// running to end, and a round.
		if placedAt < 0 || placedAt > 10*time.Second {
			t.Errorf("seed %d: the gang placed at %v (never: -1ns), want within 10 s", seed, placedAt)
		}
	}
}

// BenchmarkRoundWithGangs is a scheduling round at 10,000 workers of 8
// cores, all but 10 taken, with 100 waiting gangs of 16 executors of 8
// cores (or 100 plain apps of the same size): each round the placement
// offers each gang the 10 free workers and the gang is dropped whole,
// its workers put back. The cost of a gang that does not fit, against a
// plain app that takes what there is.
//
//	go test -run XXX -bench RoundWithGangs -benchmem ./master
func BenchmarkRoundWithGangs(b *testing.B) {
	for _, gang := range []int{0, 16} {
		b.Run(fmt.Sprintf("gang=%d", gang), func(b *testing.B) {
			h := newLeader(b, func(c *Config) { c.GangReserveAfter = time.Hour })
			h.addWorkers(10000, 8, 16384)
			h.addApp(wire.AppDescription{MaxCores: 8 * 9990, CoresPerExecutor: 8, MemoryPerExecutorMB: 100})
			h.commit()
			var apps []*appInfo
			for range 100 {
				apps = append(apps, h.addApp(wire.AppDescription{MaxCores: 8 * 16, CoresPerExecutor: 8, MemoryPerExecutorMB: 100, Gang: gang}))
			}
			h.commit()
			b.ReportAllocs()
			for b.Loop() {
				if gang == 0 {
					b.StopTimer()
					for _, a := range apps { // the plain apps give back what they got
						for _, e := range executors(a) {
							h.c.executorEnded(e, executorEnd{state: wire.ExecutorKilled, event: wire.EventExecutorUpdated})
						}
					}
					h.c.syncIndex()
					b.StartTimer()
				}
				h.c.scheduleNow()
			}
			if gang > 0 {
				for _, a := range apps {
					if len(a.executors) != 0 {
						b.Fatalf("a gang of %d placed in part: %d executors", gang, len(a.executors))
					}
				}
			}
		})
	}
}
