package master

import (
	"context"
	"fmt"
	"runtime"
	"runtime/pprof"
	"testing"
	"time"

	"github.com/berth-cluster/berth/wire"
)

// BenchmarkFairShareRound is one scheduling round of 1,000 apps waiting
// for one-core executors on 10,000 workers of 8 cores, the apps in 1 queue
// (first come first served, as before queues) or spread over 100 queues
// of weights 1 to 4: the round's cost with the fair share against without.
// Each app wants want executors: 20 (20,000 launches, room for all) or 100
// (more than the 80,000 cores: the queues' shares decide). Only the round
// is timed; each iteration rebuilds the cluster.
//
//	go test -run '^$' -bench FairShareRound -benchtime 3x ./master
func BenchmarkFairShareRound(b *testing.B) {
	for _, want := range []int{20, 100} {
		for _, queues := range []int{1, 100} {
			b.Run(fmt.Sprintf("want=%d/queues=%d", want, queues), func(b *testing.B) {
				launched := 0
				for b.Loop() {
					b.StopTimer()
					launched = timedRound(b, fairShareCluster(b, queues, want))
				}
				b.ReportMetric(float64(launched), "launches")
			})
		}
	}
}

// fairShareCluster is the benchmark's cluster, its apps registered and
// not yet placed.
func fairShareCluster(b *testing.B, queues, want int) *harness {
	h := newLeader(b, nil)
	h.addWorkers(10000, 8, 65536)
	for q := range queues {
		if _, err := h.setQueue(fmt.Sprintf("q%03d", q), wire.QueueSpec{Weight: weight(float64(1 + q%4))}); err != nil {
			b.Fatal(err)
		}
	}
	for i := range 1000 {
		h.addAppNoSchedule(wire.AppDescription{
			Command:             []string{"x"},
			MaxCores:            want,
			CoresPerExecutor:    1,
			MemoryPerExecutorMB: 512,
			ProcessSpec:         wire.ProcessSpec{Queue: fmt.Sprintf("q%03d", i%queues), Priority: i % 3},
		})
	}
	for _, a := range h.c.appOrder {
		a.rec.ExecutorIDsReserved = 1 << 20 // ids enough: the round writes no reservation
	}
	return h
}

// BenchmarkPreemptionDecision is one round's preemption at the size of
// BenchmarkFairShareRound: 80,000 one-core executors of 100 queues fill
// 10,000 workers, and a queue that holds nothing waits for 400 cores past
// its delay. Timed: the round that decides (its fair shares, the plan over
// every running executor) and writes the preemptions.
//
//	go test -run '^$' -bench PreemptionDecision -benchtime 3x ./master
func BenchmarkPreemptionDecision(b *testing.B) {
	preempted := 0
	for b.Loop() {
		b.StopTimer()
		h := newLeader(b, func(c *Config) { c.PreemptionDelay = time.Second })
		h.addWorkers(10000, 8, 65536)
		for q := range 100 {
			h.setQueue(fmt.Sprintf("q%03d", q), wire.QueueSpec{})
		}
		h.setQueue("late", wire.QueueSpec{Weight: weight(10)})
		for i := range 1000 {
			a := h.addAppNoSchedule(wire.AppDescription{Command: []string{"x"}, MaxCores: 80, CoresPerExecutor: 1, MemoryPerExecutorMB: 512, ProcessSpec: wire.ProcessSpec{Queue: fmt.Sprintf("q%03d", i%100)}})
			h.c.ensureExecutorIDs(a, 80)
			h.commit()
		}
		for _, a := range h.c.appOrder {
			for _, e := range a.executors {
				e.launching, e.state = false, wire.ExecutorRunning
			}
		}
		h.fx.pending = nil
		h.addAppNoSchedule(wire.AppDescription{Command: []string{"x"}, MaxCores: 400, CoresPerExecutor: 1, MemoryPerExecutorMB: 512, ProcessSpec: wire.ProcessSpec{Queue: "late"}})
		h.c.scheduleNow() // starved from now
		h.clock.advance(2 * time.Second)
		h.fx.pending = nil
		preempted = timedRound(b, h)
	}
	b.ReportMetric(float64(preempted), "preemptions")
}

// timedRound times one scheduling round of h, the timer stopped, and
// says how many writes it made (launches or preemptions).
func timedRound(b *testing.B, h *harness) int {
	runtime.GC() // the setup's garbage is not the round's
	b.StartTimer()
	// Labelled, so that a profile can keep the timed round alone:
	// go tool pprof -tagfocus round=timed
	pprof.Do(context.Background(), pprof.Labels("round", "timed"), func(context.Context) { h.c.scheduleNow() })
	b.StopTimer()
	n := len(h.fx.pending)
	b.StartTimer()
	return n
}
