package master

import (
	"context"
	"errors"

	"github.com/berth-cluster/berth/internal/httpx"
	"github.com/berth-cluster/berth/wire"
)

// Master → worker commands: each is a body sent on its route of
// wire.WorkerAPI through the outbox, typed together so that a body sent on
// the wrong route does not compile; and what happens when one cannot be
// delivered.

// workerCommand is one master → worker request.
type workerCommand struct {
	route wire.Endpoint
	body  wire.Command // carries the epoch; what the command concerns
	post  func(ctx context.Context, client *httpx.Client, address string) error
}

// commandOn is the command that sends body on route.
func commandOn[Req wire.Command](route wire.Route[Req, wire.None], body Req) workerCommand {
	return workerCommand{route: route.Endpoint, body: body, post: func(ctx context.Context, client *httpx.Client, address string) error {
		_, err := httpx.Call(ctx, client, address, route, body)
		return err
	}}
}

func (cmd workerCommand) String() string { return cmd.route.Mux() }

// commandFailed handles a command no worker accepted after retries. A
// launch that never reached its worker counts as a failed executor (so a
// worker that fails every launch cannot make an app relaunch for ever); a
// driver launch that failed is relaunched if supervised, else ERROR.
func (c *core) commandFailed(workerID string, cmd workerCommand, err error) {
	if !c.leading() {
		return
	}
	c.log.Warn("command to worker failed", "worker", workerID, "command", cmd, "err", err)
	var se *httpx.StatusError
	if errors.As(err, &se) && (se.Code == wire.CodeDiskFull || se.Code == wire.CodePortsBusy) {
		c.launchRefused(workerID, cmd, se.Code, se.Message)
		return
	}
	switch body := cmd.body.(type) {
	case wire.LaunchExecutor:
		a := c.apps[body.AppID]
		if a == nil {
			return
		}
		e := a.executors[body.ExecutorID]
		if e == nil || e.launching || e.state != wire.ExecutorLaunching {
			return
		}
		if !e.worker.schedulable() {
			// Its worker is shutting down or gone: not the app's fault.
			c.executorLost(e, "launch failed, the worker is going away: "+err.Error())
			return
		}
		// It never reached its worker: the worker's failure, not the app's.
		c.endExecutor(e, executorEnd{state: wire.ExecutorFailed, message: "launch failed: " + err.Error(), event: wire.EventExecutorUpdated, cause: wire.CauseWorker}, nil)
	case wire.LaunchDriver:
		if d := c.drivers[body.DriverID]; d != nil && d.worker != nil && d.worker.rec.ID == workerID && !d.launching {
			c.driverLost(d, "launch failed: "+err.Error(), nil)
		}
	}
}

// launchRefused handles a launch the worker refused before starting
// anything, for a cause that is no one's failure: its work dir is full
// (it filled before its heartbeat said so), or a process of its host
// holds ports the launch was given (the heartbeat that follows lists
// them, and they are given no process). The executor is replaced (LOST,
// not FAILED: neither the app's failures nor the worker's health count
// it), the driver waits again for a worker; a full disk also keeps the
// worker from taking anything new.
func (c *core) launchRefused(workerID string, cmd workerCommand, code wire.ErrorCode, why string) {
	w := c.workers[workerID]
	if w == nil {
		return
	}
	if code == wire.CodeDiskFull {
		c.noteDiskFull(w, why)
	}
	switch body := cmd.body.(type) {
	case wire.LaunchExecutor:
		a := c.apps[body.AppID]
		if a == nil {
			return
		}
		if e := a.executors[body.ExecutorID]; e != nil && !e.launching && e.state == wire.ExecutorLaunching && e.worker == w {
			c.executorLost(e, why) // the worker's "not started: ..."
		}
	case wire.LaunchDriver:
		if d := c.drivers[body.DriverID]; d != nil && d.worker == w && !d.launching && d.ending == nil {
			c.requeueDriver(d, why)
		}
	}
}

func (c *core) killExecutorCommand(appID string, id int) workerCommand {
	return commandOn(wire.WorkerAPI.KillExecutor, wire.KillExecutor{Epoch: c.epoch, AppID: appID, ExecutorID: id})
}

func killDriverCommand(epoch uint64, id string) workerCommand {
	return commandOn(wire.WorkerAPI.KillDriver, wire.KillDriver{Epoch: epoch, DriverID: id})
}

// process is what a worker runs for an executor or a driver: its command
// and environment, what its description says of its checks and of a
// masters' outage (spec), as its tenant's Unix user, with the room, the
// resource addresses and the ports its placement gave it.
func process(command []string, env map[string]string, spec wire.ProcessSpec, user string, cores, memory int, grants wire.ResourceGrants, ports map[string]int) wire.Process {
	return wire.Process{Command: command, Env: env, Cores: cores, MemoryMB: memory, Resources: grants, User: user,
		StopAfterDisconnect: spec.StopAfterDisconnect, Ports: ports, Checks: spec.Checks}
}
