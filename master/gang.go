package master

import (
	"fmt"
	"time"

	"github.com/berth-cluster/berth/wire"
)

// Gangs (docs/PLACEMENT.md): the scheduler places a gang whole or not at
// all (scheduler/gang.go); a member lost later is replaced alone, unless
// the app asks "gangRestart": then the others are killed here and the
// whole gang placed again.

// restartGang kills the rest of a's gang once one member ended, for an
// app that asks gangRestart: the whole gang is then placed again.
func (c *core) restartGang(a *appInfo, ended *executorInfo) {
	if a.rec.Desc.Gang == 0 || !a.rec.Desc.GangRestart || a.ending != nil || a.gangRestarting || a.state.Finished() {
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
