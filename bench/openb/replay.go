package openb

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/berth-cluster/berth/placement"
	"github.com/berth-cluster/berth/placement/gpushare"
	"github.com/berth-cluster/berth/wire"
)

// TuneRatio is the paper's workload: tasks until their GPU demand is 130%
// of the cluster's GPUs.
const TuneRatio = 1.3

// Arrivals is one seed's task sequence, the paper's way
// (kubernetes-scheduler-simulator's SortClusterPods and
// TunePodsByNodeTotalResource): the tasks sorted by name and shuffled with
// the seed; then, while their GPU demand exceeds ratio × capacity, a random
// task leaves; or while it is below, random tasks of the list are added at
// the end as long as the next one's per-GPU demand still fits under the
// target (the simulator compares the per-GPU figure, which lets a last
// multi-GPU task overshoot a little; kept for fidelity).
func Arrivals(tasks []Task, capacityMilli int, ratio float64, seed uint64) []Task {
	rng := rand.New(rand.NewPCG(seed, 0))
	sorted := slices.Clone(tasks)
	slices.SortFunc(sorted, func(a, b Task) int { return strings.Compare(a.Name, b.Name) })
	out := slices.Clone(sorted)
	rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	if ratio <= 0 || len(sorted) == 0 {
		return out
	}
	total := 0
	for _, t := range out {
		total += t.TotalGPUMilli()
	}
	target := ratio * float64(capacityMilli)
	if float64(total) > target {
		for float64(total) > target && len(out) > 0 {
			i := rng.IntN(len(out))
			total -= out[i].TotalGPUMilli()
			out = slices.Delete(out, i, i+1)
		}
		return out
	}
	for i := 0; ; i++ {
		t := sorted[rng.IntN(len(sorted))]
		if float64(total+t.GPUMilli) > target {
			return out
		}
		t.Name = fmt.Sprintf("%s-tuned-%d", t.Name, i)
		total += t.TotalGPUMilli()
		out = append(out, t)
	}
}

// Workload is the task list as placement.Options.Workload: one shape per
// task (fragmentation-aware policies group and weigh them).
func Workload(tasks []Task) []placement.TaskShape {
	out := make([]placement.TaskShape, len(tasks))
	for i, t := range tasks {
		a := t.app()
		out[i] = placement.TaskShape{Cores: a.CoresPerExecutor, Resources: a.ResourcesPerExecutor, Weight: 1}
	}
	return out
}

// Shapes is the task list as the fragmentation-aware policies take it
// through gpushare.WorkloadSetter: Workload's shapes with each task's
// memory and GPU-model constraint (Constraint is the trace's gpu_spec, as the
// simulator groups its typical tasks by it), checked against the nodes'
// labels.
func Shapes(tasks []Task, nodes []Node) []gpushare.Shape {
	labels := labelsOf(nodes)
	base := Workload(tasks)
	out := make([]gpushare.Shape, len(tasks))
	for i, t := range tasks {
		out[i] = gpushare.Shape{TaskShape: base[i], MemoryMB: t.MemMiB}
		if cs := t.Constraints(); cs != nil {
			out[i].Constraint, out[i].Fits = t.Spec, fitsOf(cs, labels)
		}
	}
	return out
}

// labelsOf is each node's labels by its name (the worker's id).
func labelsOf(nodes []Node) map[string]map[string]string {
	out := make(map[string]map[string]string, len(nodes))
	for _, n := range nodes {
		out[n.Name] = n.Labels()
	}
	return out
}

// fitsOf is placement.App.Fits for constraints: the workers whose labels
// satisfy every one.
func fitsOf(cs []wire.Constraint, labels map[string]map[string]string) func(string) bool {
	return func(id string) bool { return wire.Satisfies(labels[id], cs) }
}

// NewPolicy makes a replay's policy: name with the replay's options (the
// seed, unit 1, the task list as the workload), and for the policies that
// measure fragmentation the task list with its constraints (Shapes).
func NewPolicy(name string, seed uint64, tasks []Task, nodes []Node) (placement.Policy, error) {
	p, err := placement.New(name, placement.Options{MinCoreUnit: 1, Seed: seed, Workload: Workload(tasks)})
	if err != nil {
		return nil, err
	}
	if ws, ok := p.(gpushare.WorkloadSetter); ok {
		ws.SetWorkload(Shapes(tasks, nodes))
	}
	return p, nil
}

// Run is one policy's replay of one seed.
type Run struct {
	Policy string
	Seed   uint64
	// Curve[k] is the GPU allocation ratio (% of the cluster's GPUs) once
	// k% of the cluster's GPU capacity has arrived as demand, k from 0.
	Curve     []float64
	Final     float64 // the ratio once every task arrived
	Arrived   float64 // the demand that arrived in all, % of capacity
	Placed    int
	Failed    int
	Decisions time.Duration // time spent in placement.PlaceOne
}

// At is the allocation ratio at pct% arrived (the last figure reached if
// the run did not get that far).
func (r *Run) At(pct int) float64 {
	if pct < len(r.Curve) {
		return r.Curve[pct]
	}
	return r.Final
}

// PerDecision is the mean time of one placement decision.
func (r *Run) PerDecision() time.Duration {
	if n := r.Placed + r.Failed; n > 0 {
		return r.Decisions / time.Duration(n)
	}
	return 0
}

// Replay places each task on arrival with the policy, or fails it (no
// departures), and records the GPU allocation ratio at every 1% of arrived
// demand. The nodes are given to the policy in an order drawn from the seed:
// the paper's simulator names each node with a random prefix per seed and
// breaks ties between equal scores by name, so that order is which of
// equals a scoring policy takes. A policy that has a gpushare.Fleet (fgd,
// frag-fit) decides through it: the decisions of placement.PlaceOne over
// every node, without scoring every node each time.
func Replay(nodes []Node, arrivals []Task, policy placement.Policy, seedOf uint64) (*Run, error) {
	return replay(nodes, arrivals, policy, seedOf, false)
}

// ReplayExhaustive is Replay with every decision made by placement.PlaceOne
// over every node (the same decisions, each scoring every node).
func ReplayExhaustive(nodes []Node, arrivals []Task, policy placement.Policy, seedOf uint64) (*Run, error) {
	return replay(nodes, arrivals, policy, seedOf, true)
}

func replay(nodes []Node, arrivals []Task, policy placement.Policy, seedOf uint64, exhaustive bool) (*Run, error) {
	nodes = presentOrder(nodes, seedOf)
	workers := make([]placement.Worker, len(nodes))
	capacity := 0
	for i, n := range nodes {
		free := make([]int, n.GPUs)
		for g := range free {
			free[g] = placement.Whole
		}
		workers[i] = placement.Worker{ID: n.Name, CoresFree: n.MilliCPU, MemoryFreeMB: n.MemMiB, Tags: map[string]int{}}
		if n.GPUs > 0 {
			workers[i].Resources = map[string][]int{gpushare.GPU: free}
		}
		capacity += n.GPUs * placement.Whole
	}
	if capacity == 0 {
		return nil, fmt.Errorf("the nodes have no GPU")
	}
	if m, ok := policy.(gpushare.WorkerMeeter); ok {
		m.MeetWorkers(workers)
	}
	place := func(app placement.App, _ string) (placement.Launch, int) {
		return placement.PlaceOne(app, workers, policy)
	}
	if fleet, err := gpushare.NewFleet(policy); err == nil && !exhaustive {
		for _, w := range workers {
			fleet.Add(w)
		}
		place = fleet.Place
	}
	run := &Run{Policy: policy.Name(), Seed: seedOf, Curve: []float64{0}}
	arrived, allocated := 0, 0
	labels := labelsOf(nodes)
	for _, t := range arrivals {
		app := t.app()
		constraint := ""
		if cs := t.Constraints(); cs != nil {
			app.Fits, constraint = fitsOf(cs, labels), t.Spec
		}
		start := time.Now()
		l, i := place(app, constraint)
		run.Decisions += time.Since(start)
		arrived += t.TotalGPUMilli()
		if i < 0 {
			run.Failed++
		} else {
			if err := apply(&workers[i], app, l); err != nil {
				return nil, fmt.Errorf("%s: task %s: %w", policy.Name(), t.Name, err)
			}
			run.Placed++
			allocated += t.TotalGPUMilli()
		}
		ratio := 100 * float64(allocated) / float64(capacity)
		for len(run.Curve) <= 100*arrived/capacity {
			run.Curve = append(run.Curve, ratio)
		}
	}
	run.Final = 100 * float64(allocated) / float64(capacity)
	run.Arrived = 100 * float64(arrived) / float64(capacity)
	return run, nil
}

// presentOrder is the nodes in the order a replay of seed presents them:
// each node once, in a permutation drawn from the seed, written to a new
// slice (applied in place, a permutation copies some nodes twice and drops
// others: another cluster than the trace's, a different one per seed).
func presentOrder(nodes []Node, seed uint64) []Node {
	out := make([]Node, len(nodes))
	for i, j := range rand.New(rand.NewPCG(seed, 1)).Perm(len(nodes)) {
		out[i] = nodes[j]
	}
	return out
}

// apply takes a launch off its worker, checking that nothing is
// over-committed (a policy's bug must not pass for a good figure).
func apply(w *placement.Worker, app placement.App, l placement.Launch) error {
	if l.Cores != app.CoresPerExecutor || l.MemoryMB != app.MemoryPerExecutorMB || w.CoresFree < l.Cores || w.MemoryFreeMB < l.MemoryMB {
		return fmt.Errorf("launch %+v does not fit worker %s (%d cores, %d MB free)", l, w.ID, w.CoresFree, w.MemoryFreeMB)
	}
	if app.Fits != nil && !app.Fits(w.ID) {
		return fmt.Errorf("launch %+v on worker %s, which the task's constraints exclude", l, w.ID)
	}
	w.CoresFree -= l.Cores
	w.MemoryFreeMB -= l.MemoryMB
	for name, amount := range app.ResourcesPerExecutor {
		addrs := l.Resources[name]
		per := min(amount, placement.Whole)
		if want := max(1, amount/placement.Whole); len(addrs) != want {
			return fmt.Errorf("launch on %s got %s addresses %v for %d thousandths", w.ID, name, addrs, amount)
		}
		for _, a := range addrs {
			if a < 0 || a >= len(w.Resources[name]) || w.Resources[name][a] < per {
				return fmt.Errorf("launch on %s over-commits %s address %d", w.ID, name, a)
			}
			w.Resources[name][a] -= per
		}
	}
	if tag := placement.Tag(app); tag != "" {
		w.Tags[tag]++
	}
	return nil
}
