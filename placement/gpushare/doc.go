// Package gpushare holds placement policies for clusters whose executors
// share GPUs: the six baselines of "Beware of Fragmentation: Scheduling
// GPU-Sharing Workloads with Fragmentation Gradient Descent" (Weng et al.,
// USENIX ATC 2023), written from the paper's definitions and its
// simulator's scoring, and berth's own policy, frag-fit (fragfit.go).
//
// Importing the package registers them with placement.Register under
// "random", "dot-product", "gpu-clustering", "gpu-packing", "gpu-best-fit",
// "fgd" and "frag-fit" (cmd/master and the benchmarks import it).
//
// Each places one executor at a time on the worker it scores best (the
// Kubernetes scheduler's way, which the paper's simulator uses): a score
// from 0 to 100 per usable worker, the highest wins, and among equals the
// first in the order the workers are given (the simulator breaks ties by
// node name, which it draws at random per seed; the trace replay gives the
// workers in that order). random draws from Options.Seed. The GPUs are the custom resource "gpu";
// an executor asks for a share of one (below placement.Whole) or for whole
// GPUs. CPU is the worker's free cores, in whatever unit the caller uses
// (the trace replay uses milli-cores).
//
// fgd and frag-fit also take a workload with memory and constraints
// (WorkloadSetter, Shape) and the workers before the first decision
// (WorkerMeeter); Fleet makes their one-at-a-time decisions, the same as
// placement.PlaceOne's, without scoring every worker each time (fleet.go).
package gpushare

import "github.com/berth-cluster/berth/placement"

// GPU is the resource these policies look at.
const GPU = "gpu"

func init() {
	for name, ctor := range map[string]func(placement.Options) (placement.Policy, error){
		"random":         newRandom,
		"dot-product":    newDotProduct,
		"gpu-clustering": newGPUClustering,
		"gpu-packing":    newGPUPacking,
		"gpu-best-fit":   newGPUBestFit,
		"fgd":            newFGD,
		"frag-fit":       newFragFit,
	} {
		placement.MustRegister(name, ctor)
	}
}
