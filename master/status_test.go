package master

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/berth-cluster/berth/wire"
)

// The cluster's status as the loop builds it (GET /v1/cluster, the UI):
// what it says, and what it costs at scale.

// GET /v1/cluster?workers=false: the workers' summary without their list
// (a cluster of 100,000 workers stays cheap to ask); the summary is there
// with the list too. A bad value is a 400 naming the parameter.
func TestClusterWorkerSummary(t *testing.T) {
	h := newLeader(t, nil, "w1")
	h.addWorker("w2", 8, 8192)
	h.addApp(wire.AppDescription{MaxCores: 2, CoresPerExecutor: 1, MemoryPerExecutorMB: 512})
	want := wire.WorkerSummary{Total: 2, Alive: 2, Cores: 12, CoresUsed: 2, MemoryMB: 12288, MemoryUsedMB: 1024}
	for _, list := range []bool{true, false} {
		st := h.c.clusterStatus(true, list)
		if !reflect.DeepEqual(st.WorkerSummary, want) || (len(st.Workers) == 2) != list {
			t.Errorf("list %v: summary %+v (want %+v), %d workers listed", list, st.WorkerSummary, want, len(st.Workers))
		}
	}
	if _, err := parseBoolParam(wire.ClusterWorkersParam, "nope"); statusOf(err) != http.StatusBadRequest {
		t.Errorf("workers=nope: %v, want 400", err)
	}
}

// The summary counts the custom resources: every address offered, and
// those wholly free on ALIVE workers (a dead worker's are offered, not
// free), by the committed state as the workers' status shows it (a launch
// being written does not count yet); the same with the workers listed or
// not, and on a follower.
func TestClusterWorkerSummaryCountsResources(t *testing.T) {
	h := newLeader(t, nil)
	h.addGPUWorker("w1", 8, "a", "b", "c")
	h.addApp(wire.AppDescription{MaxCores: 1, CoresPerExecutor: 1, MemoryPerExecutorMB: 64, ResourcesPerExecutor: wire.ResourceAmounts{"gpu": 0.5}}) // on w1
	h.addGPUWorker("w2", 8, "a", "b")
	h.addWorker("w3", 8, 8192)
	check := func(when string, want []wire.ResourceTotal) {
		t.Helper()
		for _, list := range []bool{true, false} {
			if got := h.c.clusterStatus(false, list).WorkerSummary.Resources; !slices.Equal(got, want) {
				t.Errorf("%s, list %v: resources %+v, want %+v", when, list, got, want)
			}
		}
	}
	check("a half GPU in use on w1", []wire.ResourceTotal{{Name: "gpu", Addresses: 5, Free: 4}})

	// A launch not yet durable: w2's GPU is taken for placement, still free
	// in what status reads show.
	h.c.registerApp(wire.AppDescription{Command: []string{"x"}, MaxCores: 1, CoresPerExecutor: 1, MemoryPerExecutorMB: 64,
		ResourcesPerExecutor: wire.ResourceAmounts{"gpu": 1}}, keyed{}, func(wire.Submitted, error) {})
	h.step() // the app's record: durable; its launch: being written
	if !h.c.workers["w2"].launchingResources() {
		t.Fatal("no launch with a GPU being written on w2")
	}
	check("a launch being written", []wire.ResourceTotal{{Name: "gpu", Addresses: 5, Free: 4}})
	h.commit()
	check("the launch durable", []wire.ResourceTotal{{Name: "gpu", Addresses: 5, Free: 3}})

	w2 := h.c.workers["w2"]
	if _, err := run(h, func(reply reply[wire.None]) {
		h.c.removeWorker(w2, "lost", func(err error) { reply(wire.None{}, err) })
	}); err != nil {
		t.Fatal(err)
	}
	if w2.state != wire.WorkerDead || len(h.c.workers["w1"].executors) != 2 {
		t.Fatalf("w2 %s, %d executors on w1: want w2 DEAD, the GPU app's executor placed again on w1", w2.state, len(h.c.workers["w1"].executors))
	}
	check("w2 dead", []wire.ResourceTotal{{Name: "gpu", Addresses: 5, Free: 1}})
	if got := wire.DescribeTotals(h.c.clusterStatus(false, false).WorkerSummary.Resources); got != "gpu 1/5 free" {
		t.Errorf("described %q", got)
	}
	// A follower counts the workers of its replica (w2's record went with
	// it), none of them ALIVE to its knowledge.
	if _, ok := h.fx.state.Workers["w2"]; ok {
		t.Fatal("w2's record is still there")
	}
	follower := followerStatus("m2", wire.MasterStandby, "m1", "", h.fx.state, false, false)
	if got := follower.WorkerSummary.Resources; !slices.Equal(got, []wire.ResourceTotal{{Name: "gpu", Addresses: 3}}) {
		t.Errorf("a follower's summary: %+v, want w1's 3 gpu addresses, none free", got)
	}
}

// The lists' shape: ended apps and drivers newest first, and empty lists
// as [] (not null) in JSON, with completed ones asked for or not; the same
// on a follower's replica.
func TestClusterListsShape(t *testing.T) {
	h := newLeader(t, nil, "w1")
	first, second := h.addApp(wire.AppDescription{MaxCores: 1}), h.addApp(wire.AppDescription{MaxCores: 1})
	for _, a := range []*appInfo{first, second} {
		if _, err := run(h, func(reply reply[wire.AppStatus]) { h.c.endApp(a.rec.ID, wire.AppKilled, "killed by request", reply) }); err != nil {
			t.Fatal(err)
		}
	}
	st := h.c.clusterStatus(true, true)
	if len(st.CompletedApps) != 2 || st.CompletedApps[0].ID != second.rec.ID {
		t.Errorf("completed apps %v, want %s (ended last) first", appIDs(st.CompletedApps), second.rec.ID)
	}
	for _, cs := range []*wire.ClusterStatus{h.c.clusterStatus(false, true),
		followerStatus("m2", wire.MasterStandby, "m1", "", h.fx.state, false, true)} {
		data, err := json.Marshal(cs)
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{`"completedApps":[]`, `"activeApps":[]`, `"activeDrivers":[]`, `"completedDrivers":[]`} {
			if !strings.Contains(string(data), want) {
				t.Errorf("%s view without completed lists: no %s in %s", cs.View, want, data)
			}
		}
	}
}

func appIDs(apps []wire.AppStatus) []string {
	ids := make([]string, len(apps))
	for i, a := range apps {
		ids[i] = a.ID
	}
	return ids
}

// addWorkers registers n workers of one size, w000000 onwards: a fleet for
// the benchmarks.
func (h *harness) addWorkers(n, cores, memoryMB int) {
	for i := range n {
		h.addWorker(fmt.Sprintf("w%06d", i), cores, memoryMB)
	}
}

// BenchmarkClusterStatus is the loop's part of a UI page or GET
// /v1/cluster: the status of 10,000 workers and 1,000 running apps (3
// executors each), with every waiting reason worked out. The UI's own
// rendering is ui's BenchmarkPages.
//
//	go test -run XXX -bench ClusterStatus -benchmem ./master
func BenchmarkClusterStatus(b *testing.B) {
	h := newLeader(b, nil)
	h.addWorkers(10000, 4, 8192)
	for range 1000 {
		h.addApp(wire.AppDescription{MaxCores: 3, CoresPerExecutor: 1, MemoryPerExecutorMB: 512})
	}
	if st := h.c.clusterStatus(true, true); len(st.Workers) != 10000 || len(st.ActiveApps) != 1000 || len(st.ActiveApps[999].Executors) != 3 {
		b.Fatalf("setup: %d workers, %d apps", len(st.Workers), len(st.ActiveApps))
	}
	for b.Loop() {
		h.c.clusterStatus(true, true)
	}
}

// BenchmarkSchedulingPass is the master's part of placing one new app (4
// executors of 1 core) on a cluster of 1,000 to 100,000 workers: the app's
// registration, the scheduling pass over its placement index, the launches'
// records committed, and the app's end (so that every iteration sees the
// same cluster). The pass must not cost in proportion to the workers.
//
//	go test -run XXX -bench SchedulingPass -benchmem ./master
func BenchmarkSchedulingPass(b *testing.B) {
	for _, n := range []int{1000, 10000, 100000} {
		b.Run(fmt.Sprintf("workers=%d", n), func(b *testing.B) {
			h := newLeader(b, nil)
			h.addWorkers(n, 8, 16384)
			for b.Loop() {
				a := h.addApp(wire.AppDescription{MaxCores: 4, CoresPerExecutor: 1, MemoryPerExecutorMB: 512})
				if len(a.executors) != 4 {
					b.Fatalf("%d executors placed", len(a.executors))
				}
				if _, err := run(h, func(reply reply[wire.AppStatus]) { h.c.endApp(a.rec.ID, wire.AppFinished, "done", reply) }); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkClusterSummary is GET /v1/cluster?workers=false on a cluster of
// 100,000 workers with one app waiting (it needs its waiting reason).
func BenchmarkClusterSummary(b *testing.B) {
	h := newLeader(b, nil)
	h.addWorkers(100000, 8, 16384)
	h.addApp(wire.AppDescription{MaxCores: 1, MemoryPerExecutorMB: 1 << 29})
	b.ReportAllocs()
	for b.Loop() {
		if st := h.c.clusterStatus(false, false); st.WorkerSummary.Total != 100000 || st.ActiveApps[0].Waiting == "" {
			b.Fatalf("summary %+v", st.WorkerSummary)
		}
	}
}

// BenchmarkClusterSummaryRebuild is the summary built again after a
// change (a launch, an end) at 100,000 workers, without custom resources
// and with 8 GPUs each: the path of a status read in a busy cluster.
//
//	go test -run XXX -bench ClusterSummaryRebuild -benchmem ./master
func BenchmarkClusterSummaryRebuild(b *testing.B) {
	for _, gpus := range [][]string{nil, {"0", "1", "2", "3", "4", "5", "6", "7"}} {
		b.Run(fmt.Sprintf("gpus=%d", len(gpus)), func(b *testing.B) {
			h := newLeader(b, nil)
			for i := range 100000 {
				if gpus == nil {
					h.addWorker(fmt.Sprintf("w%06d", i), 8, 16384)
				} else {
					h.addGPUWorker(fmt.Sprintf("w%06d", i), 8, gpus...)
				}
			}
			b.ReportAllocs()
			for b.Loop() {
				h.c.viewsStale()
				if s := h.c.workerSummary(); s.Total != 100000 || len(s.Resources) != min(len(gpus), 1) {
					b.Fatalf("summary %+v", s)
				}
			}
		})
	}
}

// BenchmarkTick is the loop's timers at 100,000 workers with nothing due:
// the pass every tick makes over the fleet (expiry, drains).
//
//	go test -run XXX -bench Tick -benchmem ./master
func BenchmarkTick(b *testing.B) {
	h := newLeader(b, nil)
	h.addWorkers(100000, 8, 16384)
	b.ReportAllocs()
	for b.Loop() {
		h.c.tick()
	}
	if n := len(h.c.sortedWorkerList()); n != 100000 {
		b.Fatalf("%d workers after the ticks", n)
	}
}

// BenchmarkRoundNothingFits is a scheduling round at 100,000 workers with
// one app that fits no worker (the floor benchmark's probe): what every
// registration, launch and end costs the loop while an app waits.
//
//	go test -run XXX -bench RoundNothingFits -benchmem ./master
func BenchmarkRoundNothingFits(b *testing.B) {
	h := newLeader(b, nil)
	h.addWorkers(100000, 8, 16384)
	a := h.addApp(wire.AppDescription{MaxCores: 1, MemoryPerExecutorMB: 1 << 29})
	b.ReportAllocs()
	for b.Loop() {
		h.c.scheduleNow()
	}
	if len(a.executors) != 0 {
		b.Fatalf("%d executors placed", len(a.executors))
	}
}

// A completed app lists its executors as they ended, on the leader that
// ended it, on a follower, and on the next leader (the list was empty
// after a failover: EXECUTORS "KILLED:1" turned "-").
func TestCompletedAppKeepsItsExecutorsAcrossAFailover(t *testing.T) {
	h := newLeader(t, nil, "w1")
	a := h.addApp(wire.AppDescription{MaxCores: 2, CoresPerExecutor: 1, MemoryPerExecutorMB: 100})
	for _, e := range executors(a) {
		h.report(e, wire.ExecutorRunning, nil)
	}
	if _, err := run(h, func(reply reply[wire.AppStatus]) { h.c.endApp(a.rec.ID, wire.AppKilled, "killed by request", reply) }); err != nil {
		t.Fatal(err)
	}
	states := func(st *wire.ClusterStatus) []string {
		var out []string
		for _, c := range st.CompletedApps {
			if c.ID == a.rec.ID {
				for _, e := range c.Executors {
					out = append(out, fmt.Sprintf("%d:%s@%s", e.ID, e.State, e.WorkerID))
				}
			}
		}
		return out
	}
	before := states(h.c.clusterStatus(true, true))
	if len(before) != 2 || !strings.Contains(before[0], "KILLED@w1") {
		t.Fatalf("on the leader that ended it: %v, want its 2 executors KILLED", before)
	}
	if got := states(followerStatus("m2", wire.MasterStandby, "m1", "", h.fx.state, true, true)); !slices.Equal(got, before) {
		t.Errorf("on a follower: %v, want %v", got, before)
	}
	h.failover()
	if got := states(h.c.clusterStatus(true, true)); !slices.Equal(got, before) {
		t.Errorf("on the next leader: %v, want %v", got, before)
	}
}

// A follower counts what the placements on record hold on each worker
// (executors and running drivers), as the leader does once they are
// durable: not 0 beside running apps because it does not lead.
func TestFollowerCountsWorkersUseFromTheRecords(t *testing.T) {
	h := newLeader(t, nil, "w1", "w2")
	h.addApp(wire.AppDescription{MaxCores: 6, CoresPerExecutor: 2, MemoryPerExecutorMB: 512})
	h.addDriver(wire.DriverDescription{Command: []string{"d"}, Cores: 1, MemoryMB: 256})
	h.commit()
	leader := h.c.clusterStatus(false, true)
	follower := followerStatus("m2", wire.MasterStandby, "m1", "", h.fx.state, false, true)
	if leader.WorkerSummary.CoresUsed != 7 {
		t.Fatalf("the leader counts %d cores used, want 7 (3 executors of 2 and a driver of 1)", leader.WorkerSummary.CoresUsed)
	}
	for i, lw := range leader.Workers {
		fw := follower.Workers[i]
		if fw.ID != lw.ID || fw.CoresUsed != lw.CoresUsed || fw.MemoryUsedMB != lw.MemoryUsedMB {
			t.Errorf("a follower's %s: %d cores %d MB used, the leader's %s: %d cores %d MB", fw.ID, fw.CoresUsed, fw.MemoryUsedMB, lw.ID, lw.CoresUsed, lw.MemoryUsedMB)
		}
	}
	if follower.WorkerSummary.CoresUsed != 7 || follower.WorkerSummary.MemoryUsedMB != leader.WorkerSummary.MemoryUsedMB {
		t.Errorf("a follower's summary: %+v, the leader's %+v", follower.WorkerSummary, leader.WorkerSummary)
	}
}
