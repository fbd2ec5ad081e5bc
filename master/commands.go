package master

import (
	"fmt"

	"github.com/berth-cluster/berth/wire"
)

// Master → worker commands: a small enum, each sent on its route of
// wire.WorkerAPI through the outbox, and what happens when one cannot be
// delivered.

// workerCommand is one master → worker request.
type workerCommand struct {
	kind commandKind
	body any // carries the epoch
	// What it concerns, for commandFailed.
	appID    string
	execID   int
	driverID string
}

// commandKind names a master → worker command; its route is endpoint().
type commandKind int

const (
	cmdLaunchExecutor commandKind = iota + 1
	cmdKillExecutor
	cmdLaunchDriver
	cmdKillDriver
	cmdAppFinished
	cmdReconnect
)

// commandRoutes maps each command to its route on the worker.
var commandRoutes = map[commandKind]wire.Endpoint{
	cmdLaunchExecutor: wire.WorkerAPI.LaunchExecutor.Endpoint,
	cmdKillExecutor:   wire.WorkerAPI.KillExecutor.Endpoint,
	cmdLaunchDriver:   wire.WorkerAPI.LaunchDriver.Endpoint,
	cmdKillDriver:     wire.WorkerAPI.KillDriver.Endpoint,
	cmdAppFinished:    wire.WorkerAPI.AppFinished.Endpoint,
	cmdReconnect:      wire.WorkerAPI.Reconnect.Endpoint,
}

// endpoint is the command's route on the worker.
func (k commandKind) endpoint() wire.Endpoint {
	e, ok := commandRoutes[k]
	if !ok {
		panic(fmt.Sprintf("master: command kind %d has no route", k))
	}
	return e
}

func (k commandKind) String() string { return k.endpoint().Mux() }

// commandFailed handles a command no worker accepted after retries. A
// launch that never reached its worker counts as a failed executor (so a
// worker that fails every launch cannot make an app relaunch for ever); a
// driver launch that failed is relaunched if supervised, else ERROR.
func (c *core) commandFailed(workerID string, cmd workerCommand, err error) {
	if !c.leading() {
		return
	}
	c.log.Warn("command to worker failed", "worker", workerID, "command", cmd.kind, "err", err)
	switch cmd.kind {
	case cmdLaunchExecutor:
		a := c.apps[cmd.appID]
		if a == nil {
			return
		}
		e := a.executors[cmd.execID]
		if e == nil || e.launching || e.state != wire.ExecutorLaunching {
			return
		}
		if !e.worker.schedulable() {
			// Its worker is shutting down or gone: not the app's fault.
			c.executorLost(e, "launch failed, the worker is going away: "+err.Error())
			return
		}
		c.endExecutor(e, executorEnd{state: wire.ExecutorFailed, message: "launch failed: " + err.Error(), event: wire.EventExecutorUpdated}, nil)
	case cmdLaunchDriver:
		if d := c.drivers[cmd.driverID]; d != nil && d.worker != nil && d.worker.rec.ID == workerID && !d.launching {
			c.driverLost(d, "launch failed: "+err.Error())
		}
	}
}

func (c *core) killExecutorCommand(appID string, id int) workerCommand {
	return workerCommand{kind: cmdKillExecutor, body: wire.KillExecutor{Epoch: c.epoch, AppID: appID, ExecutorID: id}, appID: appID, execID: id}
}

func killDriverCommand(epoch uint64, id string) workerCommand {
	return workerCommand{kind: cmdKillDriver, body: wire.KillDriver{Epoch: epoch, DriverID: id}, driverID: id}
}
