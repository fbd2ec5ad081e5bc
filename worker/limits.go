package worker

import (
	"fmt"
	"os"
	"path/filepath"
)

// setupLimits makes the worker's cgroups, or says at start (and in every
// registration, so in the cluster's status) that the limits are not
// enforced and why.
func (w *Worker) setupLimits() {
	movers := []int{os.Getpid()} // the worker and its guardian share its cgroup
	if w.guard.pid != 0 {
		movers = append(movers, w.guard.pid)
	}
	cg, err := setupCgroups(w.id, w.cfg.PidsLimit, movers...)
	if err != nil {
		w.limits = "not enforced: " + err.Error()
		w.log.Warn("limits not enforced: executors and drivers run without memory, CPU or pids limits, in process groups only", "why", err)
		return
	}
	w.cg = cg
	for _, dir := range cg.base {
		w.guard.cgroupParent(dir) // the guardian empties them if the worker dies
	}
	w.limits = "cgroup v1"
	if cg.v2 {
		w.limits = "cgroup v2"
	}
	w.log.Info("limits enforced", "by", w.limits, "pidsLimit", w.cfg.PidsLimit)
}

// cgroupFor makes the cgroup of p's attempt (nil without cgroups).
func (w *Worker) cgroupFor(p *proc) (*cgroup, error) {
	if w.cg == nil {
		return nil, nil
	}
	name := "driver-" + p.driverID
	if p.kind == kindExecutor {
		name = fmt.Sprintf("executor-%s-%d", p.appID, p.execID)
	}
	g, err := w.cg.create(filepath.Base(name), p.cores, p.memoryMB)
	if err != nil {
		return nil, fmt.Errorf("making its cgroup: %w", err)
	}
	return g, nil
}

// memoryNote is the end message of a process the kernel killed for passing
// its memory limit (Spark's and YARN's wording), "" for any other end.
func memoryNote(p *proc, code int) string {
	if !p.oomKilled {
		return ""
	}
	return fmt.Sprintf("killed: exceeded its memory limit of %d MB (%s)", p.memoryMB, DescribeExitCode(code))
}
