package worker

import "strconv"

// The worker's parent group weighs the cores it offers, up to the
// machine's CPUs, against the machine's other processes: each executor's
// group weighs its own cores (create), but among the machine's processes
// the parent counts as a single one. Left at the default (one CPU's
// weight: cpu.shares 1024, cpu.weight 100), every executor of a worker
// together weighed one thread, and a driver's JVM starting beside them
// (33 JVMs on 2 cores, docs/BENCHMARKS.md §10) or one busy process took
// half the machine from all of them. Capped at the machine's CPUs, as
// Kubernetes weighs its pods' group by the node's allocatable CPU: a
// worker that offers more cores than there are (tests, benchmarks) must
// not outweigh the masters beside it (a weight of 32 cores on 2 starved
// three Raft masters out of their quorum). The cap is a worker's: workers
// sharing a host add up (four of 8 cores on 2 CPUs weigh 8 CPUs, which
// kept three masters' quorum in docs/BENCHMARKS.md §10's runs).

// parentWeight is the control file and value of a parent group for a
// worker offering cores on a machine of cpus.
func parentWeight(cores, cpus int, v2 bool) (file, value string) {
	n := max(min(cores, cpus), 1)
	if v2 {
		return "cpu.weight", strconv.Itoa(min(n*100, 10000))
	}
	return "cpu.shares", strconv.Itoa(n * 1024)
}
