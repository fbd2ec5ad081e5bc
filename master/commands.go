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
	if errors.As(err, &se) && se.Code == wire.CodeDiskFull {
		c.launchRefusedForDisk(workerID, cmd, se.Message)
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
		c.endExecutor(e, executorEnd{state: wire.ExecutorFailed, message: "launch failed: " + err.Error(), event: wire.EventExecutorUpdated}, nil)
	case wire.LaunchDriver:
		if d := c.drivers[body.DriverID]; d != nil && d.worker != nil && d.worker.rec.ID == workerID && !d.launching {
			c.driverLost(d, "launch failed: "+err.Error(), nil)
		}
	}
}

// launchRefusedForDisk handles a launch the worker refused because its
// work dir is full (it filled before its heartbeat said so): nothing
// started, and it is no one's failure. The worker takes nothing new from
// now on; the executor is replaced elsewhere (LOST, not FAILED: the app's
// failures are not counted), the driver waits again for another worker.
func (c *core) launchRefusedForDisk(workerID string, cmd workerCommand, why string) {
	w := c.workers[workerID]
	if w == nil {
		return
	}
	c.noteDiskFull(w, why)
	switch body := cmd.body.(type) {
	case wire.LaunchExecutor:
		a := c.apps[body.AppID]
		if a == nil {
			return
		}
		if e := a.executors[body.ExecutorID]; e != nil && !e.launching && e.state == wire.ExecutorLaunching && e.worker == w {
			c.executorLost(e, why) // the worker's "not started: work dir ... full"
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
