package master

import (
	"fmt"
	"time"

	"github.com/berth-cluster/berth/scheduler"
	"github.com/berth-cluster/berth/wire"
)

// Gangs (docs/PLACEMENT.md): the scheduler places a gang whole or not at
// all, and decides when a member's end restarts it (scheduler/gang.go); a
// member lost later is replaced alone, unless the app asks "gangRestart":
// then the others are killed here and the whole gang placed again.

// restartGang kills the rest of a's gang once ended, one of its members,
// has ended, when scheduler.GangEnd says so: the whole gang is then placed
// again.
func (c *core) restartGang(a *appInfo, ended *executorInfo) {
	g := scheduler.GangEnd{
		Gang: a.rec.Desc.Gang, Restart: a.rec.Desc.GangRestart, Restarting: a.gangRestarting,
		Ending: a.ending != nil || a.state.Finished(),
		// endExecutor keeps a preempted member's reason through its end.
		Killed: ended.state == wire.ExecutorKilled && ended.preemptedFor == "",
	}
	if !g.Restarts() {
		return
	}
	a.gangRestarting, a.gangWaitingSince = true, time.Time{}
	why := fmt.Sprintf("gang restart: executor %d of the gang ended (%s)", ended.id, ended.state)
	c.log.Info("restarting an app's gang", "app", a.rec.ID, "why", why, "members", len(a.executors))
	for _, e := range sortedExecutors(a.executors) {
		if !e.launching {
			c.endExecutor(e, executorEnd{state: wire.ExecutorKilled, message: why, event: wire.EventExecutorUpdated, note: why, kill: true}, nil)
		}
	}
}
