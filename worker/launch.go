package worker

import (
	"net/http"
	"path/filepath"
	"strconv"

	"github.com/berth-cluster/berth/internal/httpx"
	"github.com/berth-cluster/berth/wire"
)

// A launch turns a master's request into a proc (its argv with the
// placeholders filled in, its environment, its directory) and hands it to a
// runner goroutine (runner.go).

// launchExecutor records the executor and starts its runner; a repeated
// launch of the same executor is a no-op.
func (w *Worker) launchExecutor(req *wire.LaunchExecutor) error {
	execID, cores := strconv.Itoa(req.ExecutorID), strconv.Itoa(req.Cores)
	dir := filepath.Join(w.cfg.WorkDir, req.AppID, execID)
	berth := w.berthEnv(req.Process)
	berth[wire.EnvAppID], berth[wire.EnvExecutorID] = req.AppID, execID
	p := &proc{
		kind: kindExecutor, appID: req.AppID, execID: req.ExecutorID,
		cores: req.Cores, memoryMB: req.MemoryMB, resources: req.Resources, user: req.User,
		stopAfterDisconnect: req.StopAfterDisconnect.D(),
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
func (w *Worker) launchDriver(req *wire.LaunchDriver) error {
	cores := strconv.Itoa(req.Cores)
	dir := filepath.Join(w.cfg.WorkDir, driversDir, req.DriverID)
	berth := w.berthEnv(req.Process)
	berth[wire.EnvDriverID] = req.DriverID
	if req.Token != "" {
		berth[wire.EnvToken] = req.Token // so the driver can register and manage its apps
	}
	if w.cfg.TLS != nil {
		berth[wire.EnvTLSCAFile] = filepath.Join(dir, caFile) // to verify the masters (writeProcFiles)
	}
	p := &proc{
		kind: kindDriver, driverID: req.DriverID,
		cores: req.Cores, memoryMB: req.MemoryMB, supervise: req.Supervise, resources: req.Resources, user: req.User,
		stopAfterDisconnect: req.StopAfterDisconnect.D(),
		argv: substitute(req.Command, wire.PlaceholderCores, cores, wire.PlaceholderHostname, w.host,
			wire.PlaceholderResources, filepath.Join(dir, resourcesFile)),
		env:   buildEnv(berth, req.Env),
		dir:   dir,
		state: string(wire.DriverRunning), // the master marks it RUNNING as it launches it
	}
	return w.launch(p)
}

// berthEnv is berth's variables of every process: what p was given and
// where it runs (buildEnv puts them over the request's env).
func (w *Worker) berthEnv(p wire.Process) map[string]string {
	env := map[string]string{
		wire.EnvCores: strconv.Itoa(p.Cores), wire.EnvMemoryMB: strconv.Itoa(p.MemoryMB),
		wire.EnvWorkerID: w.id, wire.EnvWorkerHost: w.host, wire.EnvMaster: w.masterList,
	}
	resourceEnv(env, p.Resources)
	return env
}

// launch checks p's resource grants, then records p and starts its runner
// unless a process of its id exists.
func (w *Worker) launch(p *proc) error {
	if err := w.checkGrants(p.resources); err != nil {
		return httpx.Coded(http.StatusBadRequest, wire.CodeBadRequest, "%v", err)
	}
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
