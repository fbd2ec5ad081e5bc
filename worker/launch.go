package worker

import (
	"fmt"
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
	if err := w.checkLaunch(req.Process); err != nil {
		return httpx.Coded(http.StatusBadRequest, wire.CodeBadRequest, "%v", err)
	}
	execID, cores := strconv.Itoa(req.ExecutorID), strconv.Itoa(req.Cores)
	dir := filepath.Join(w.cfg.WorkDir, req.AppID, execID)
	berth := w.berthEnv(req.Process)
	berth[wire.EnvAppID], berth[wire.EnvExecutorID] = req.AppID, execID
	pairs := append(portPairs(req.Process),
		wire.PlaceholderAppID, req.AppID, wire.PlaceholderExecutorID, execID,
		wire.PlaceholderCores, cores, wire.PlaceholderHostname, w.host,
		wire.PlaceholderResources, filepath.Join(dir, resourcesFile), wire.PlaceholderHome, filepath.Join(dir, homeDir))
	p := &proc{
		kind: kindExecutor, appID: req.AppID, execID: req.ExecutorID,
		cores: req.Cores, memoryMB: req.MemoryMB, resources: req.Resources, user: req.User,
		stopAfterDisconnect: req.StopAfterDisconnect.D(),
		ports:               req.Ports, checks: req.Checks,
		argv: substitute(req.Command, pairs...),
		// In the env's values too: a Spark executor finds the URLs of
		// its own logs in SPARK_LOG_URL_STDOUT, which name its id.
		env:   buildEnv(berth, substituteValues(req.Env, pairs...)),
		dir:   dir,
		state: string(wire.ExecutorLaunching),
	}
	return w.launch(p)
}

// launchDriver records the driver and starts its runner; a repeated launch
// of the same driver is a no-op.
func (w *Worker) launchDriver(req *wire.LaunchDriver) error {
	if err := w.checkLaunch(req.Process); err != nil {
		return httpx.Coded(http.StatusBadRequest, wire.CodeBadRequest, "%v", err)
	}
	if req.Restart != nil {
		if err := req.Restart.Check(); err != nil {
			return httpx.Coded(http.StatusBadRequest, wire.CodeBadRequest, "%v", err)
		}
	}
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
	pairs := append(portPairs(req.Process), wire.PlaceholderCores, cores, wire.PlaceholderHostname, w.host,
		wire.PlaceholderResources, filepath.Join(dir, resourcesFile), wire.PlaceholderHome, filepath.Join(dir, homeDir))
	p := &proc{
		kind: kindDriver, driverID: req.DriverID,
		cores: req.Cores, memoryMB: req.MemoryMB, supervise: req.Supervise, resources: req.Resources, user: req.User,
		stopAfterDisconnect: req.StopAfterDisconnect.D(),
		ports:               req.Ports, checks: req.Checks, restart: req.Restart,
		argv:  substitute(req.Command, pairs...),
		env:   buildEnv(berth, substituteValues(req.Env, pairs...)),
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
	for label, port := range p.Ports {
		env[wire.PortEnv(label)] = strconv.Itoa(port)
	}
	return env
}

// portPairs is substitute's pairs for p's ports: {{PORT_HTTP}} → 20001.
func portPairs(p wire.Process) []string {
	var pairs []string
	for label, port := range p.Ports {
		pairs = append(pairs, wire.PortPlaceholder(label), strconv.Itoa(port))
	}
	return pairs
}

// checkLaunch refuses what the master should never send: ports outside
// this worker's range, checks that do not hold.
func (w *Worker) checkLaunch(p wire.Process) error {
	labels := make([]string, 0, len(p.Ports))
	for label, port := range p.Ports {
		if !w.cfg.PortRange.Contains(port) {
			return fmt.Errorf("port %d (%s) is outside this worker's --port-range %d-%d", port, label, w.cfg.PortRange.First, w.cfg.PortRange.Last)
		}
		labels = append(labels, label)
	}
	return wire.CheckHealthSpec(labels, p.Checks, nil)
}

// launch checks p's resource grants, then records p and starts its runner
// unless a process of its id exists.
func (w *Worker) launch(p *proc) error {
	if err := w.checkGrants(p.resources); err != nil {
		return httpx.Coded(http.StatusBadRequest, wire.CodeBadRequest, "%v", err)
	}
	if full := w.diskFull(); full != "" && !w.procs.exists(p) {
		// Its directory, logs and files could not be written: refuse
		// rather than start and fail (a driver would end ERROR for a
		// disk that filled before the master heard). The master places
		// it elsewhere; the heartbeat tells it to place nothing here.
		w.noteDisk(full)
		select {
		case w.beatNow <- struct{}{}:
		default:
		}
		return httpx.Coded(http.StatusInsufficientStorage, wire.CodeDiskFull, "not started: %s", full)
	}
	if held := heldPorts(p.ports); len(held) > 0 && !w.procs.exists(p) {
		return w.refusePortsHeld(held)
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
