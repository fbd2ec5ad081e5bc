package worker

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"time"

	"github.com/berth-cluster/berth/internal/httpx"
	"github.com/berth-cluster/berth/wire"
)

// Kill reasons, in the final state's message.
const (
	reasonMaster   = "killed by the master"
	reasonAppEnded = "application finished"
	reasonShutdown = "worker shutting down"
)

// errKilledBeforeStart: the kill came before the process did.
var errKilledBeforeStart = errors.New("killed before it started")

// launchExecutor records the executor and starts its runner; a repeated
// launch of the same executor is a no-op.
func (w *Worker) launchExecutor(req wire.LaunchExecutor) error {
	if err := w.checkGrants(req.Resources); err != nil {
		return httpx.Coded(http.StatusBadRequest, wire.CodeBadRequest, "%v", err)
	}
	execID, cores := strconv.Itoa(req.ExecutorID), strconv.Itoa(req.Cores)
	dir := filepath.Join(w.cfg.WorkDir, req.AppID, execID)
	berth := map[string]string{
		wire.EnvAppID: req.AppID, wire.EnvExecutorID: execID,
		wire.EnvCores: cores, wire.EnvMemoryMB: strconv.Itoa(req.MemoryMB),
		wire.EnvWorkerID: w.id, wire.EnvWorkerHost: w.host, wire.EnvMaster: w.masterList,
	}
	resourceEnv(berth, req.Resources)
	p := &proc{
		kind: kindExecutor, appID: req.AppID, execID: req.ExecutorID,
		cores: req.Cores, memoryMB: req.MemoryMB, resources: req.Resources,
		argv: substitute(req.Command,
			wire.PlaceholderAppID, req.AppID, wire.PlaceholderExecutorID, execID,
			wire.PlaceholderCores, cores, wire.PlaceholderHostname, w.host,
			wire.PlaceholderResources, filepath.Join(dir, resourcesFile)),
		env:   buildEnv(berth, req.Env),
		dir:   dir,
		state: string(wire.ExecutorLaunching),
	}
	return w.launch(p)
}

// launchDriver records the driver and starts its runner; a repeated launch
// of the same driver is a no-op.
func (w *Worker) launchDriver(req wire.LaunchDriver) error {
	if err := w.checkGrants(req.Resources); err != nil {
		return httpx.Coded(http.StatusBadRequest, wire.CodeBadRequest, "%v", err)
	}
	cores := strconv.Itoa(req.Cores)
	dir := filepath.Join(w.cfg.WorkDir, driversDir, req.DriverID)
	berth := map[string]string{
		wire.EnvDriverID: req.DriverID,
		wire.EnvCores:    cores, wire.EnvMemoryMB: strconv.Itoa(req.MemoryMB),
		wire.EnvWorkerID: w.id, wire.EnvWorkerHost: w.host, wire.EnvMaster: w.masterList,
	}
	if req.Token != "" {
		berth[wire.EnvToken] = req.Token // so the driver can register and manage its apps
	}
	if w.cfg.TLS != nil {
		berth[wire.EnvTLSCAFile] = w.cfg.TLS.CAFile() // to verify the masters
	}
	resourceEnv(berth, req.Resources)
	p := &proc{
		kind: kindDriver, driverID: req.DriverID,
		cores: req.Cores, memoryMB: req.MemoryMB, supervise: req.Supervise, resources: req.Resources,
		argv: substitute(req.Command, wire.PlaceholderCores, cores, wire.PlaceholderHostname, w.host,
			wire.PlaceholderResources, filepath.Join(dir, resourcesFile)),
		env:   buildEnv(berth, req.Env),
		dir:   dir,
		state: string(wire.DriverRunning), // the master marks it RUNNING as it launches it
	}
	return w.launch(p)
}

func (w *Worker) launch(p *proc) error {
	p.killCh, p.done = make(chan struct{}), make(chan struct{})
	existing, added := w.procs.add(p)
	switch {
	case existing == nil:
		return httpx.Coded(http.StatusServiceUnavailable, wire.CodeShuttingDown, "the worker is shutting down")
	case !added:
		w.procLog(p).Info("launch of a process that already exists: nothing to do", "state", w.procs.stateOf(existing))
		return nil
	}
	go w.runProc(p)
	return nil
}

// kill asks p to stop: SIGTERM to its process group now, SIGKILL after the
// grace period. It does not wait. It reports false if p had already ended or
// was being killed.
func (w *Worker) kill(p *proc, reason string) bool {
	w.procs.mu.Lock()
	defer w.procs.mu.Unlock()
	if p.ended || p.killReason != "" {
		return false
	}
	p.killReason = reason
	close(p.killCh)
	w.terminateLocked(p)
	return true
}

// terminateLocked sends SIGTERM to p's running attempt, if any, and arms the
// SIGKILL for when the grace period is over and that attempt still runs.
func (w *Worker) terminateLocked(p *proc) {
	proc := p.process
	if proc == nil {
		return // not started yet, or between two runs: the runner sees killCh
	}
	p.signalLocked(syscall.SIGTERM)
	time.AfterFunc(w.cfg.KillGrace, func() {
		w.procs.mu.Lock()
		defer w.procs.mu.Unlock()
		if p.process == proc {
			w.procLog(p).Warn("still running after the grace period; sending SIGKILL", "pid", proc.Pid, "grace", w.cfg.KillGrace)
			p.signalLocked(syscall.SIGKILL)
		}
	})
}

func (w *Worker) runProc(p *proc) {
	if p.kind == kindExecutor {
		w.runExecutor(p)
	} else {
		w.runDriver(p)
	}
}

func (w *Worker) runExecutor(p *proc) {
	cmd, err := w.startAttempt(p, "")
	if err != nil {
		w.endExecutor(p, startFailureState(err, wire.ExecutorKilled, wire.ExecutorFailed))
		return
	}
	w.procs.setState(p, string(wire.ExecutorRunning))
	w.enqueueExecutor(wire.ExecutorStateChanged{AppID: p.appID, ExecutorID: p.execID, State: wire.ExecutorRunning})
	code, reason := w.wait(p, cmd)
	switch {
	case memoryNote(p, code) != "":
		w.endExecutor(p, ending[wire.ExecutorState]{wire.ExecutorFailed, &code, memoryNote(p, code)})
	case reason != "":
		w.endExecutor(p, ending[wire.ExecutorState]{wire.ExecutorKilled, &code, reason + " (" + DescribeExitCode(code) + ")"})
	case code == 0:
		w.endExecutor(p, ending[wire.ExecutorState]{wire.ExecutorExited, &code, DescribeExitCode(code)})
	default:
		w.endExecutor(p, ending[wire.ExecutorState]{wire.ExecutorFailed, &code, DescribeExitCode(code)})
	}
}

func (w *Worker) runDriver(p *proc) {
	delay := w.cfg.DriverRestartMin
	note := ""
	for run := 1; ; run++ {
		cmd, err := w.startAttempt(p, note)
		if err != nil {
			w.endDriver(p, startFailureState(err, wire.DriverKilled, wire.DriverError))
			return
		}
		if run == 1 {
			w.procs.setState(p, string(wire.DriverRunning))
			w.enqueueDriver(wire.DriverStateChanged{DriverID: p.driverID, State: wire.DriverRunning})
		}
		began := time.Now()
		code, reason := w.wait(p, cmd)
		switch {
		case memoryNote(p, code) != "" && !p.supervise:
			w.endDriver(p, ending[wire.DriverState]{wire.DriverFailed, &code, memoryNote(p, code)})
			return
		case reason != "":
			w.endDriver(p, ending[wire.DriverState]{wire.DriverKilled, &code, reason + " (" + DescribeExitCode(code) + ")"})
			return
		case code == 0:
			w.endDriver(p, ending[wire.DriverState]{wire.DriverFinished, &code, DescribeExitCode(code)})
			return
		case !p.supervise:
			w.endDriver(p, ending[wire.DriverState]{wire.DriverFailed, &code, DescribeExitCode(code)})
			return
		}
		if time.Since(began) > w.cfg.DriverRestartMax {
			delay = w.cfg.DriverRestartMin // it ran long enough to count as healthy
		}
		w.procLog(p).Warn("supervised driver failed; restarting it", "exit", DescribeExitCode(code), "in", delay, "run", run+1)
		t := time.NewTimer(delay)
		select {
		case <-p.killCh:
			t.Stop()
			w.endDriver(p, ending[wire.DriverState]{wire.DriverKilled, &code, w.killReason(p) + " while waiting to restart"})
			return
		case <-t.C:
		}
		delay = min(delay*2, w.cfg.DriverRestartMax)
		note = fmt.Sprintf("berth: driver %s %s; restarting it (run %d)\n", p.driverID, DescribeExitCode(code), run+1)
	}
}

// startAttempt prepares p's directory and log files and starts its process.
// note, if any, is appended to stderr first (a supervised driver's restart).
func (w *Worker) startAttempt(p *proc, note string) (*exec.Cmd, error) {
	if w.killReason(p) != "" {
		return nil, errKilledBeforeStart
	}
	if err := os.MkdirAll(p.dir, 0o750); err != nil {
		return nil, fmt.Errorf("creating its directory: %w", err)
	}
	const logFlags = os.O_WRONLY | os.O_CREATE | os.O_APPEND
	stdout, err := os.OpenFile(filepath.Join(p.dir, "stdout"), logFlags, 0o640)
	if err != nil {
		return nil, fmt.Errorf("opening its stdout: %w", err)
	}
	defer stdout.Close() // the child has its own copy
	stderr, err := os.OpenFile(filepath.Join(p.dir, "stderr"), logFlags, 0o640)
	if err != nil {
		return nil, fmt.Errorf("opening its stderr: %w", err)
	}
	defer stderr.Close()
	tenant, component := p.dir, "berth.driver" // a driver's; an executor's is its app's
	if p.kind == kindExecutor {
		tenant, component = filepath.Dir(p.dir), "berth.executor"
	}
	files := []string{stdout.Name(), stderr.Name()}
	if p.resources != nil || slices.Contains(p.argv, filepath.Join(p.dir, resourcesFile)) {
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

func (w *Worker) killReason(p *proc) string {
	w.procs.mu.Lock()
	defer w.procs.mu.Unlock()
	return p.killReason
}

// ending is a final state with its exit code and message.
type ending[S ~string] struct {
	state    S
	exitCode *int
	message  string
}

// startFailureState is the final state of a process that did not start.
func startFailureState[S ~string](err error, killed, failed S) ending[S] {
	if errors.Is(err, errKilledBeforeStart) {
		return ending[S]{state: killed, message: err.Error()}
	}
	e := ending[S]{state: failed, message: "could not start: " + err.Error()}
	if code := startFailure(err); code != 0 {
		e.exitCode = &code
		e.message = fmt.Sprintf("could not start (%s): %v", DescribeExitCode(code), err)
	}
	return e
}

func (w *Worker) endExecutor(p *proc, e ending[wire.ExecutorState]) {
	if e.state == wire.ExecutorKilled && e.exitCode == nil {
		e.message = w.killReason(p) + ": " + e.message
	}
	w.procLog(p).Info("executor ended", "state", e.state, "message", e.message)
	// The table first, so that GET /v1/state agrees with what the master
	// hears; done last, once the report is queued (shutdown waits on it).
	w.procs.setEnded(p, string(e.state))
	w.metrics.exits.WithLabelValues("executor", string(e.state)).Inc()
	w.enqueueExecutor(wire.ExecutorStateChanged{AppID: p.appID, ExecutorID: p.execID,
		State: e.state, ExitCode: e.exitCode, Message: e.message})
	close(p.done)
}

func (w *Worker) endDriver(p *proc, e ending[wire.DriverState]) {
	if e.state == wire.DriverKilled && e.exitCode == nil {
		e.message = w.killReason(p) + ": " + e.message
	}
	w.procLog(p).Info("driver ended", "state", e.state, "message", e.message)
	w.procs.setEnded(p, string(e.state))
	w.metrics.exits.WithLabelValues("driver", string(e.state)).Inc()
	w.enqueueDriver(wire.DriverStateChanged{DriverID: p.driverID,
		State: e.state, ExitCode: e.exitCode, Message: e.message})
	close(p.done)
}

// killAll kills everything still running, in parallel, and waits for the
// final states (bounded: a process stuck in the kernel may not die even on
// SIGKILL). No launch is accepted afterwards.
func (w *Worker) killAll(ctx context.Context, reason string) {
	live := w.procs.live("", true)
	for _, p := range live {
		w.kill(p, reason)
	}
	for _, p := range live {
		select {
		case <-p.done:
		case <-ctx.Done():
			w.log.Error("processes did not end in time", "err", ctx.Err())
			return
		}
	}
}
