package openb

import (
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/berth-cluster/berth/placement"
	"github.com/berth-cluster/berth/placement/gpushare"
)

// benchState is a cluster half way through a replay of the default task
// list (seed 42, 50% of its GPU capacity arrived as demand), decided by
// the policy through a fleet, and the tasks that arrive next.
type benchState struct {
	policy placement.Policy
	fleet  *gpushare.Fleet
	next   []Task
	labels map[string]map[string]string
}

var (
	benchMu     sync.Mutex
	benchStates = map[string]*benchState{}
)

// halfway makes (once per nodes and policy, unless fresh) the state the
// decision benchmarks start from: the trace's nodes, or n built from their
// mix.
func halfway(b *testing.B, n int, policy string, fresh bool) *benchState {
	benchMu.Lock()
	defer benchMu.Unlock()
	key := fmt.Sprint(n, policy)
	if s, ok := benchStates[key]; ok && !fresh {
		return s
	}
	nodes, err := LoadNodes("data/openb_node_list_gpu_node.csv")
	if err != nil {
		b.Fatal(err)
	}
	tasks, err := LoadTasks("data/openb_pod_list_default.csv")
	if err != nil {
		b.Fatal(err)
	}
	if n > 0 {
		nodes = Scale(nodes, n)
	}
	nodes = presentOrder(nodes, 42)
	capacity := 0
	for _, nd := range nodes {
		capacity += nd.GPUs * placement.Whole
	}
	p, err := NewPolicy(policy, 42, tasks, nodes)
	if err != nil {
		b.Fatal(err)
	}
	workers := workersOf(nodes)
	p.(gpushare.WorkerMeeter).MeetWorkers(workers)
	fleet, err := gpushare.NewFleet(p)
	if err != nil {
		b.Fatal(err)
	}
	for _, w := range workers {
		fleet.Add(w)
	}
	s := &benchState{policy: p, fleet: fleet, labels: labelsOf(nodes)}
	arrivals := Arrivals(tasks, capacity, TuneRatio, 42)
	arrived := 0
	for i, t := range arrivals {
		if 2*arrived >= capacity {
			s.next = arrivals[i:]
			break
		}
		app, constraint := s.app(t)
		fleet.Place(app, constraint)
		arrived += t.TotalGPUMilli()
	}
	benchStates[key] = s
	return s
}

func (s *benchState) app(t Task) (placement.App, string) {
	app := t.app()
	if cs := t.Constraints(); cs != nil {
		app.Fits = fitsOf(cs, s.labels)
		return app, t.Spec
	}
	return app, ""
}

// workersOf is nodes as idle workers.
func workersOf(nodes []Node) []placement.Worker {
	workers := make([]placement.Worker, len(nodes))
	for i, n := range nodes {
		free := make([]int, n.GPUs)
		for g := range free {
			free[g] = placement.Whole
		}
		workers[i] = placement.Worker{ID: n.Name, CoresFree: n.MilliCPU, MemoryFreeMB: n.MemMiB, Tags: map[string]int{}, Resources: map[string][]int{gpushare.GPU: free}}
	}
	return workers
}

// BenchmarkDecision times fgd's and frag-fit's decisions from half way
// through a replay of the default list (seed 42), on the trace's 1,213
// nodes and on 100,000 built from their mix (BERTH_BENCH_100K=1; setting
// that cluster up takes a minute or two): "exhaustive" is
// placement.PlaceOne over every worker, each iteration deciding one of the
// tasks that arrive next on the cluster as it is half way (without placing
// it: every worker is scored either way); "fleet" is gpushare.Fleet, each
// iteration placing all the tasks that arrive next, one by one, on a fresh
// copy of the half-way cluster, as a replay does (µs/decision: the mean).
func BenchmarkDecision(b *testing.B) {
	sizes := []int{0}
	if os.Getenv("BERTH_BENCH_100K") != "" {
		sizes = append(sizes, 100000)
	}
	for _, n := range sizes {
		for _, policy := range []string{"fgd", "frag-fit"} {
			name := fmt.Sprintf("nodes=%d/%s", 1213, policy)
			if n > 0 {
				name = fmt.Sprintf("nodes=%d/%s", n, policy)
			}
			b.Run(name+"/exhaustive", func(b *testing.B) {
				s := halfway(b, n, policy, false)
				workers := make([]placement.Worker, s.fleet.Len())
				for i := range workers {
					workers[i] = s.fleet.Worker(i)
				}
				i := 0
				for b.Loop() {
					app, _ := s.app(s.next[i%len(s.next)])
					placement.PlaceOne(app, workers, s.policy)
					i++
				}
			})
			b.Run(name+"/fleet", func(b *testing.B) {
				decisions := 0
				for b.Loop() {
					b.StopTimer()
					s := halfway(b, n, policy, true)
					b.StartTimer()
					for _, t := range s.next {
						s.fleet.Place(s.app(t))
					}
					decisions += len(s.next)
				}
				b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(decisions), "µs/decision")
			})
		}
	}
}
