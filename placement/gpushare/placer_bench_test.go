package gpushare

import (
	"encoding/csv"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/berth-cluster/berth/placement"
)

// readOpenB reads one of bench/openb's CSV lists: its rows by column name.
func readOpenB(b *testing.B, name string) []map[string]string {
	f, err := os.Open("../../bench/openb/data/" + name)
	if err != nil {
		b.Skip(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		b.Fatal(err)
	}
	out := make([]map[string]string, 0, len(rows)-1)
	for _, r := range rows[1:] {
		m := map[string]string{}
		for j, col := range rows[0] {
			m[col] = r[j]
		}
		out = append(out, m)
	}
	return out
}

func atoi(b *testing.B, s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		b.Fatal(err)
	}
	return n
}

// openBCluster is n workers of the openb node mix (1,213 nodes, 6,212
// GPUs; node i is node i mod 1,213), about half full of the default
// list's pods (placed at random where they fit), and the pods as apps of
// one executor each (as bench/openb makes them, without their GPU-model
// constraints).
func openBCluster(b *testing.B, n int) ([]placement.Worker, []placement.App) {
	nodes := readOpenB(b, "openb_node_list_gpu_node.csv")
	pods := readOpenB(b, "openb_pod_list_default.csv")
	ws := make([]placement.Worker, n)
	capacity := 0
	for i := range ws {
		nd := nodes[i%len(nodes)]
		free := make([]int, atoi(b, nd["gpu"]))
		for g := range free {
			free[g] = placement.Whole
		}
		capacity += len(free) * placement.Whole
		ws[i] = placement.Worker{ID: fmt.Sprintf("%s-%d", nd["sn"], i/len(nodes)), CoresFree: atoi(b, nd["cpu_milli"]),
			MemoryFreeMB: atoi(b, nd["memory_mib"]), Resources: map[string][]int{GPU: free}}
	}
	apps := make([]placement.App, len(pods))
	for i, p := range pods {
		cpu := max(atoi(b, p["cpu_milli"]), 1)
		apps[i] = placement.App{ID: p["name"], CoresLeft: cpu, CoresPerExecutor: cpu, MemoryPerExecutorMB: atoi(b, p["memory_mib"]), ExecutorLimit: 1}
		if g, milli := atoi(b, p["num_gpu"]), atoi(b, p["gpu_milli"]); g > 0 && milli > 0 {
			apps[i].ResourcesPerExecutor = map[string]int{GPU: g * milli}
		}
	}
	r := rand.New(rand.NewPCG(42, 1))
	used := 0
	for k := 0; 2*used < capacity && k < 50*n; k++ {
		a := apps[r.IntN(len(apps))]
		w := &ws[r.IntN(n)]
		if w.CoresFree < a.CoresPerExecutor || w.MemoryFreeMB < a.MemoryPerExecutorMB {
			continue
		}
		if _, ok := placement.PickResources(w.Resources, a.ResourcesPerExecutor); !ok {
			continue
		}
		w.CoresFree -= a.CoresPerExecutor
		w.MemoryFreeMB -= a.MemoryPerExecutorMB
		used += a.ResourcesPerExecutor[GPU]
	}
	return ws, apps
}

// BenchmarkIndexRoundGPU times a master's round of fgd and frag-fit
// through a placement.Index on the openb node mix half full: 1,213
// workers, and 100,000 with BERTH_BENCH_100K=1. Each iteration is a round
// of 8 of the default list's pods (one executor each, taken in turn),
// whose launches are then given back (the workers Put as they were); the
// placer first places every pod once (the list has 151 shapes).
// "placer" is the Index as it is (the policy's incremental placer),
// "overall" the same through StartExecutorsOnWorkers over every worker.
// "workload": the policy is given the pods' shapes with their memory
// (SetWorkload, as bench/openb does, without the GPU-model constraints);
// "few": the same, the rounds taking the list's first 64 pods only (31
// shapes) over and over; "learnt": as the master makes it (no workload:
// learnt from the apps); "learnt-refusing": the same with every app's Fits
// refusing one worker in 16 (free ports short, a worker it failed on);
// "learnt-labels": every app's Fits taking one worker in 4 (a label
// constraint).
func BenchmarkIndexRoundGPU(b *testing.B) {
	sizes := []int{1213}
	if os.Getenv("BERTH_BENCH_100K") != "" {
		sizes = append(sizes, 100000)
	}
	for _, n := range sizes {
		ws, apps := openBCluster(b, n)
		var workload []Shape
		for _, a := range apps {
			workload = append(workload, Shape{TaskShape: placement.TaskShape{Cores: a.CoresPerExecutor, Resources: a.ResourcesPerExecutor, Weight: 1}, MemoryMB: a.MemoryPerExecutorMB})
		}
		for _, name := range []string{"fgd", "frag-fit"} {
			for _, mode := range []string{"workload", "few", "learnt", "learnt-refusing", "learnt-labels"} {
				for _, how := range []string{"placer", "overall"} {
					b.Run(fmt.Sprintf("workers=%d/%s/%s/%s", n, name, mode, how), func(b *testing.B) {
						p, _ := placement.New(name, placement.Options{MinCoreUnit: 1})
						if !strings.HasPrefix(mode, "learnt") {
							p.(WorkloadSetter).SetWorkload(workload)
						}
						pods := apps
						if mode == "few" {
							pods = apps[:64]
						}
						if every := map[string]int{"learnt-refusing": 16, "learnt-labels": 4}[mode]; every > 0 {
							pods = slices.Clone(pods)
							for i := range pods {
								refusing := mode == "learnt-refusing"
								pods[i].Fits = func(id string) bool { return (idHash(id)%every == 0) != refusing }
							}
						}
						if how == "overall" {
							p = overAll{p}
						}
						x := placement.NewIndex(p)
						for _, w := range ws {
							x.Put(w)
						}
						next := 0
						round := func() int {
							batch := make([]placement.App, 8)
							for i := range batch {
								batch[i] = pods[next%len(pods)]
								next++
							}
							launches := x.Round(batch)
							for _, l := range launches {
								w, _ := x.Worker(l.WorkerID)
								w.CoresFree += l.Cores
								w.MemoryFreeMB += l.MemoryMB
								for _, a := range batch {
									if a.ID == l.AppID {
										for res, addrs := range l.Resources {
											for _, at := range addrs {
												w.Resources[res][at] += min(a.ResourcesPerExecutor[res], placement.Whole)
											}
										}
									}
								}
								x.Put(w)
							}
							return len(launches)
						}
						// The placer's first round builds its fleet, and
						// its first app of a shape scores every worker: a
						// master meets the shapes it places once. Warm up
						// on every pod once; learning, until a pass over
						// them all leaves the measure as it was (each
						// change of it has every kind scored anew on its
						// next use: the cost of learning, counted apart in
						// BENCHMARKS.md).
						round()
						if how == "placer" {
							m := p.(interface{ measure() *fragMeasure }).measure()
							for pass := 0; pass < 4; pass++ {
								gen := m.gen
								for end := next - next%len(pods) + len(pods); next < end; {
									round()
								}
								if m.gen == gen {
									break
								}
							}
						}
						b.ResetTimer()
						launched := 0
						for range b.N {
							launched += round()
						}
						b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(max(launched, 1)), "ns/launch")
					})
				}
			}
		}
	}
}

// idHash is a worker ID's FNV-1a hash, for filters that take a fixed
// share of the workers.
func idHash(id string) int {
	h := uint32(2166136261)
	for i := 0; i < len(id); i++ {
		h = (h ^ uint32(id[i])) * 16777619
	}
	return int(h >> 1)
}
