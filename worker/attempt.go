package worker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"

	"github.com/berth-cluster/berth/internal/regularfile"
	"github.com/berth-cluster/berth/wire"
)

// maxCAFile bounds the CA certificate a driver is given a copy of.
const maxCAFile = 1 << 20

// An attempt is one run of a proc's process: startAttempt prepares its
// directory, logs, credentials and cgroup and starts it; wait waits for it
// and sweeps what it left. A supervised driver has several attempts.

// errKilledBeforeStart: the kill came before the process did.
var errKilledBeforeStart = errors.New("killed before it started")

// workerFault marks an error of the worker's own in starting a process:
// its directory, logs or files could not be made, its cgroup not set up,
// the start itself failed for a cause other than the app's command (not
// found, not executable). Only such failures count against the worker's
// health (docs/HEALTH.md); the app's own count against the app.
type workerFault struct{ err error }

func (f workerFault) Error() string { return f.err.Error() }
func (f workerFault) Unwrap() error { return f.err }

// byWorker marks err as the worker's (nil stays nil), unless it is
// another's: a tenant's Unix user this host lacks (tenantUserError) fails
// the app, not the worker's health.
func byWorker(err error) error {
	if err == nil || errors.As(err, new(tenantUserError)) {
		return err
	}
	return workerFault{err}
}

// causeOf is who a start error is owed to.
func causeOf(err error) wire.FailureCause {
	var f workerFault
	if errors.As(err, &f) {
		return wire.CauseWorker
	}
	return wire.CauseProcess
}

// startAttempt prepares p's directory and log files and starts its process.
// note, if any, is appended to stderr first (a supervised driver's restart).
func (w *Worker) startAttempt(p *proc, note string) (*exec.Cmd, error) {
	if w.killReason(p) != "" {
		return nil, errKilledBeforeStart
	}
	d, err := w.makeProcDir(p)
	if err != nil {
		return nil, byWorker(fmt.Errorf("preparing its directory: %w", err))
	}
	defer d.Close()
	stdout, stderr, err := d.openLogs()
	if err != nil {
		return nil, byWorker(err)
	}
	defer stdout.Close() // the child has its own copy
	defer stderr.Close()
	if err := w.writeProcFiles(p, d); err != nil {
		return nil, byWorker(err)
	}
	if note != "" {
		_, _ = stderr.WriteString(note)
	}
	if p.cg, err = w.cgroupFor(p); err != nil {
		return nil, byWorker(err)
	}
	cmd, g, err := w.command(p, d)
	var childEnds []*os.File
	if err == nil {
		cmd.Stdout, cmd.Stderr = stdout, stderr // Stdin nil: /dev/null
		p.logs, childEnds, err = w.pipeLogs(cmd, d)
	}
	if err == nil {
		err = w.start(p, cmd, g)
	} else {
		g.close()
	}
	for _, f := range childEnds {
		f.Close() // the child has its own copies; a copy ends once they are all closed
	}
	if err != nil {
		if p.cg != nil {
			p.cg.remove()
			p.cg = nil
		}
		p.logs = nil
		return nil, err
	}
	w.procs.mu.Lock()
	p.process = cmd.Process
	if p.killReason != "" {
		w.terminateLocked(p) // the kill came while we were starting
	}
	w.procs.mu.Unlock()
	w.metrics.launches.WithLabelValues(kindName(p.kind)).Inc()
	w.procLog(p).Info("started", "pid", cmd.Process.Pid, "argv", p.argv, "uid", d.id.uid)
	p.stopChecks = w.startChecks(p, d.id, d.home())
	return cmd, nil
}

// writeProcFiles writes the files the worker gives p in its directory:
// its resources file, and a driver's copy of the cluster's CA certificate
// (BERTH_TLS_CA_FILE), readable by p's group alone.
func (w *Worker) writeProcFiles(p *proc, d *procDir) error {
	if p.needsResourcesFile() {
		// Spark's component names: Spark's executors and drivers read
		// the file as their own (--resourcesFile), and only those.
		component := "spark.driver"
		if p.kind == kindExecutor {
			component = "spark.executor"
		}
		data, err := resourcesFileContent(component, p.resources)
		if err == nil {
			err = d.writeFile(resourcesFile, data, d.gid, 0o640)
		}
		if err != nil {
			return fmt.Errorf("writing its resources file: %w", err)
		}
	}
	if p.kind == kindDriver && w.cfg.TLS != nil {
		ca, err := regularfile.Read(w.cfg.TLS.CAFile(), maxCAFile) // not a FIFO: it would hang every driver launch
		if err == nil {
			err = d.writeFile(caFile, ca, d.gid, 0o640)
		}
		if err != nil {
			return fmt.Errorf("giving it the CA certificate: %w", err)
		}
	}
	return nil
}

// start starts cmd and, when it waits at the gate of p's cgroup, puts it
// in the cgroup and opens the gate. The guardian learns of the process on
// the spawner thread itself (Setpgid: its pid is its group's id; a
// grandchild forked before the guardian hears of the group would outlive a
// SIGKILLed worker: the window is the spawner thread's next few
// instructions).
func (w *Worker) start(p *proc, cmd *exec.Cmd, g *gate) error {
	// The spawner only ever blocks on other Starts, so no deadline is needed.
	err := startProcess(context.Background(), cmd, w.guard.track)
	g.started()
	if err != nil {
		g.close()
		if startFailure(err) == 0 {
			err = byWorker(err) // not the app's command: a fork that failed, say
		}
		return err
	}
	if g == nil {
		return nil
	}
	if err := g.open(p.cg, cmd.Process.Pid); err != nil {
		// It never ran its program: the shell exits at the closed gate.
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		w.guard.untrack(cmd.Process.Pid)
		return byWorker(fmt.Errorf("putting it in its cgroup: %w", err))
	}
	return nil
}

// wait waits for cmd to exit and returns its exit code, and the kill reason
// if it was killed.
func (w *Worker) wait(p *proc, cmd *exec.Cmd) (code int, reason string) {
	pid := cmd.Process.Pid
	if err := waitExited(pid); err != nil {
		w.procLog(p).Warn("waiting for the process", "pid", pid, "err", err)
	}
	if p.stopChecks != nil {
		p.stopChecks() // nothing of the attempt is left to check
		p.stopChecks = nil
	}
	// Exited but not reaped: forget the process before its pid is released.
	w.procs.mu.Lock()
	p.process = nil
	reason = p.killReason
	w.procs.mu.Unlock()
	// Sweep what it left in its group (background processes, grandchildren
	// ignoring SIGTERM): an executor's or driver's processes end with it.
	// The unreaped leader still pins the group id, so this cannot hit
	// another group; once swept, the guardian may forget it.
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	p.oomKilled = false
	if p.cg != nil {
		// The cgroup holds what left the group too (setsid, double forks).
		p.oomKilled = p.cg.oomKilled()
		p.cg.kill()
	}
	w.guard.untrack(pid)
	err := cmd.Wait()
	if p.cg != nil {
		p.cg.remove()
		p.cg = nil
	}
	if p.logs != nil {
		p.logs.wait(drainGrace) // every byte it wrote is in its files before its end is told
		p.logs = nil
	}
	if cmd.ProcessState == nil {
		w.procLog(p).Error("lost track of the process", "pid", pid, "err", err)
		return -1, reason
	}
	return exitCode(cmd.ProcessState), reason
}
