package worker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"

	"github.com/berth-cluster/berth/wire"
)

// An attempt is one run of a proc's process: startAttempt prepares its
// directory, logs, credentials and cgroup and starts it; wait waits for it
// and sweeps what it left. A supervised driver has several attempts.

// errKilledBeforeStart: the kill came before the process did.
var errKilledBeforeStart = errors.New("killed before it started")

// startAttempt prepares p's directory and log files and starts its process.
// note, if any, is appended to stderr first (a supervised driver's restart).
func (w *Worker) startAttempt(p *proc, note string) (*exec.Cmd, error) {
	if w.killReason(p) != "" {
		return nil, errKilledBeforeStart
	}
	if err := os.MkdirAll(p.dir, 0o750); err != nil {
		return nil, fmt.Errorf("creating its directory: %w", err)
	}
	// Each log file is named after its stream: the log routes read it so.
	const logFlags = os.O_WRONLY | os.O_CREATE | os.O_APPEND
	stdout, err := os.OpenFile(filepath.Join(p.dir, wire.LogStdout), logFlags, 0o640)
	if err != nil {
		return nil, fmt.Errorf("opening its stdout: %w", err)
	}
	defer stdout.Close() // the child has its own copy
	stderr, err := os.OpenFile(filepath.Join(p.dir, wire.LogStderr), logFlags, 0o640)
	if err != nil {
		return nil, fmt.Errorf("opening its stderr: %w", err)
	}
	defer stderr.Close()
	tenant, component := p.dir, "berth.driver" // a driver's; an executor's is its app's
	if p.kind == kindExecutor {
		tenant, component = filepath.Dir(p.dir), "berth.executor"
	}
	files := []string{stdout.Name(), stderr.Name()}
	if p.needsResourcesFile() {
		path, err := writeResourcesFile(p.dir, component, p.resources)
		if err != nil {
			return nil, err
		}
		files = append(files, path)
	}
	gid, err := w.cfg.runAs.prepare(w.cfg.WorkDir, tenant, p.dir, files...)
	if err != nil {
		return nil, err
	}
	if note != "" {
		_, _ = stderr.WriteString(note)
	}
	path, err := lookPath(p.argv[0], getenv(p.env, "PATH"))
	if err != nil {
		return nil, err
	}
	env := p.env
	if r := w.cfg.runAs; r != nil {
		env = setEnv(env, "HOME", r.home) // not the worker's
	}
	cmd := &exec.Cmd{
		Path: path, Args: p.argv, Env: env, Dir: p.dir,
		Stdout: stdout, Stderr: stderr, // Stdin nil: /dev/null
		SysProcAttr: w.sysProcAttr(gid),
	}
	logGID := -1
	if w.cfg.runAs != nil {
		logGID = int(gid)
	}
	logs, childEnds, err := w.pipeLogs(cmd, logGID)
	if err != nil {
		return nil, err
	}
	defer func() {
		for _, f := range childEnds {
			f.Close() // the child has its own copies
		}
	}()
	p.logs = logs
	if p.cg, err = w.cgroupFor(p); err != nil {
		return nil, err
	}
	if p.cg != nil {
		// The process joins its cgroup before it runs a line of its own:
		// moved there after it started, what it forked first would escape.
		if err := p.cg.enter(cmd, w.cfg.runAs); err != nil {
			p.cg.remove()
			p.cg = nil
			return nil, err
		}
	}
	started := w.guard.track
	// The spawner only ever blocks on other Starts, so no deadline is needed.
	// Setpgid: its pid is its group's id. (A grandchild forked before the
	// guardian hears of the group would outlive a SIGKILLed worker; the
	// window is the spawner thread's next few instructions.)
	if err := startProcess(context.Background(), cmd, started); err != nil {
		if p.cg != nil {
			p.cg.remove()
			p.cg = nil
		}
		return nil, err
	}
	w.procs.mu.Lock()
	p.process = cmd.Process
	if p.killReason != "" {
		w.terminateLocked(p) // the kill came while we were starting
	}
	w.procs.mu.Unlock()
	w.metrics.launches.WithLabelValues(kindName(p.kind)).Inc()
	w.procLog(p).Info("started", "pid", cmd.Process.Pid, "argv", p.argv)
	return cmd, nil
}

// wait waits for cmd to exit and returns its exit code, and the kill reason
// if it was killed.
func (w *Worker) wait(p *proc, cmd *exec.Cmd) (code int, reason string) {
	pid := cmd.Process.Pid
	if err := waitExited(pid); err != nil {
		w.procLog(p).Warn("waiting for the process", "pid", pid, "err", err)
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
		p.logs.wait() // every byte it wrote is in its files before its end is told
		p.logs = nil
	}
	if cmd.ProcessState == nil {
		w.procLog(p).Error("lost track of the process", "pid", pid, "err", err)
		return -1, reason
	}
	return exitCode(cmd.ProcessState), reason
}
