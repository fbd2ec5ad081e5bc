package scheduler

import (
	"cmp"
	"iter"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/berth-cluster/berth/placement"
	"github.com/berth-cluster/berth/wire"
)

// The scheduler's tests build a cluster by hand (workers, queues, apps
// with their executors) and ask for a plan: no master, no clock but the
// view's time.

// t0 is the tests' clock.
var t0 = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

// cluster is a hand-made state: what a master would hold.
type cluster struct {
	t       testing.TB
	now     time.Time
	cfg     Config
	policy  string
	workers []*testWorker // by id
	queues  map[string]*Queue
	apps    []*testApp
	drivers []Driver // waiting
	placed  []Driver
	seq     uint64
}

type testWorker struct {
	Worker
	res map[string][]int // free thousandths per address
}

type testApp struct {
	App
	execs []Executor
}

func newCluster(t testing.TB) *cluster {
	return &cluster{t: t, now: t0, policy: "spread", cfg: Config{PreemptionDelay: 30 * time.Second, GangReserveAfter: 2 * time.Minute},
		queues: map[string]*Queue{wire.DefaultQueue: {Name: wire.DefaultQueue, Weight: 1, Preempt: true}}}
}

// worker adds an ALIVE worker of cores and memory, empty.
func (c *cluster) worker(id string, cores, memory int) *testWorker {
	w := &testWorker{Worker: Worker{ID: id, Slot: len(c.workers), Cores: cores, MemoryMB: memory, CoresFree: cores, MemoryFreeMB: memory,
		Ports: NewPortPool(nil), Schedulable: true}}
	c.workers = append(c.workers, w)
	slices.SortFunc(c.workers, func(a, b *testWorker) int { return cmp.Compare(a.ID, b.ID) })
	return w
}

func (c *cluster) queue(name string, weight float64) *Queue {
	q := &Queue{Name: name, Weight: weight, Preempt: true}
	c.queues[name] = q
	return q
}

// inDefault is the common part of a description in the default queue:
// the master names a description's queue before the scheduler reads it.
var inDefault = wire.ProcessSpec{Queue: wire.DefaultQueue}

// app adds an app of one-core executors of memory MB, in queue q, that
// wants maxCores (0: unlimited).
func (c *cluster) app(id, q string, priority, maxCores, memory int) *testApp {
	spec := NewAppSpec(wire.AppDescription{MaxCores: maxCores, CoresPerExecutor: 1, MemoryPerExecutorMB: memory, ProcessSpec: wire.ProcessSpec{Queue: q, Priority: priority}})
	a := &testApp{App: App{ID: id, AppSpec: spec, Eligible: true, ExecutorLimit: placement.Unlimited, IDsLeft: 1 << 20}}
	c.apps = append(c.apps, a)
	return a
}

// run gives a an executor of its size on worker w, RUNNING.
func (c *cluster) run(a *testApp, worker string) {
	w := c.byID(worker)
	cores := max(a.Cores, 1)
	w.CoresFree -= cores
	w.MemoryFreeMB -= a.MemoryMB
	c.seq++
	a.execs = append(a.execs, Executor{ID: len(a.execs), WorkerSlot: w.Slot, Cores: cores, MemoryMB: a.MemoryMB, Seq: c.seq, Takeable: true})
	a.CoresGranted += cores
	a.Executors++
}

func (c *cluster) byID(id string) *testWorker {
	for _, w := range c.workers {
		if w.ID == id {
			return w
		}
	}
	c.t.Fatalf("no worker %s", id)
	return nil
}

// view is the cluster as a master would show it to the scheduler, with a
// fresh index: two views of one cluster are equal.
func (c *cluster) view() *View {
	p, err := placement.New(c.policy, placement.Options{MinCoreUnit: c.cfg.MinCoreUnit})
	if err != nil {
		c.t.Fatal(err)
	}
	v := &View{Now: c.now, Config: c.cfg, Index: placement.NewIndex(p), Fleet: testFleet{c}, Rooms: &Rooms{}}
	for _, w := range c.workers {
		if w.Placeable() {
			v.Index.Put(placement.Worker{ID: w.ID, CoresFree: w.CoresFree, MemoryFreeMB: w.MemoryFreeMB, Resources: cloneFree(w.res)})
			v.Capacity.Cores += w.Cores
			v.Capacity.MemoryMB += w.MemoryMB
			for r, units := range w.res {
				if v.Capacity.Resources == nil {
					v.Capacity.Resources = map[string]int{}
				}
				v.Capacity.Resources[r] += len(units) * placement.Whole
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(c.queues)) {
		v.Queues = append(v.Queues, *c.queues[name])
	}
	for _, a := range c.apps {
		app := a.App
		app.History = history(a.execs)
		v.Apps = append(v.Apps, app)
	}
	v.Drivers, v.WaitingDrivers = c.placed, c.drivers
	return v
}

// status is the cluster as a status read judges waiting reasons.
func (c *cluster) status(alive bool, last Plan) *StatusView {
	v := c.view()
	queues := map[string]Queue{}
	for _, q := range v.Queues {
		q.Last = last.Queues[q.Name]
		queues[q.Name] = q
	}
	return &StatusView{Now: c.now, Config: c.cfg, Fleet: v.Fleet, Capacity: v.Capacity, Rooms: v.Rooms, Alive: alive,
		PlacedDrivers: len(c.placed), Queues: queues, GangHolds: last.GangHolds}
}

// schedule is one round on a view of the cluster.
func (c *cluster) schedule() Plan { return Schedule(c.view()) }

type history []Executor

func (h history) Len() int          { return len(h) }
func (h history) At(i int) Executor { return h[i] }
func (h history) Seq(i int) uint64  { return h[i].Seq }

type testFleet struct{ c *cluster }

func (f testFleet) Worker(id string) (Worker, bool) {
	for _, w := range f.c.workers {
		if w.ID == id {
			return w.Worker, true
		}
	}
	return Worker{}, false
}

func (f testFleet) Workers() iter.Seq[Worker] {
	return func(yield func(Worker) bool) {
		for _, w := range f.c.workers {
			if !yield(w.Worker) {
				return
			}
		}
	}
}

func (f testFleet) ResourcesFree(id string) map[string][]int {
	w, _ := f.Worker(id)
	if !w.Resources {
		return nil
	}
	return cloneFree(f.c.byID(id).res)
}

func (f testFleet) ResourcesOffered(id string) map[string][]int {
	out := map[string][]int{}
	for r, units := range f.c.byID(id).res {
		out[r] = slices.Repeat([]int{placement.Whole}, len(units))
	}
	return out
}

func (f testFleet) Slots() int { return len(f.c.workers) }

// launched counts a plan's launches by app.
func launched(p Plan) map[string]int {
	out := map[string]int{}
	for _, l := range p.Launches {
		out[l.AppID]++
	}
	return out
}
