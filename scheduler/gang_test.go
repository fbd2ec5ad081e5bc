package scheduler

import (
	"strings"
	"testing"
	"time"

	"github.com/berth-cluster/berth/wire"
)

// gangApp adds an app whose first n executors of cores each start
// together or not at all.
func (c *cluster) gangApp(id string, n, cores int) *testApp {
	a := c.app(id, wire.DefaultQueue, 0, 0, 100)
	a.Cores, a.Gang, a.MaxCores = cores, n, n*cores
	return a
}

// A gang the cluster holds starts whole in one round; one it does not is
// not started at all, and the workers offered go back to the index.
func TestGangStartsWholeOrNotAtAll(t *testing.T) {
	cl := newCluster(t)
	cl.worker("w1", 4, 4096)
	cl.worker("w2", 4, 4096)
	cl.gangApp("G", 3, 2)
	p := cl.schedule()
	if got := launched(p)["G"]; got != 3 {
		t.Errorf("a gang of 3 that fits: %d launched, want 3", got)
	}
	if !p.Apps["G"].GangWaitingSince.IsZero() {
		t.Errorf("a gang placed whole still waits since %v", p.Apps["G"].GangWaitingSince)
	}

	// 6 cores free, but each worker's 3 hold one executor of 2: the
	// index offers 2 of the 3.
	cl = newCluster(t)
	cl.worker("w1", 3, 4096)
	cl.worker("w2", 3, 4096)
	cl.gangApp("G", 3, 2)
	p = cl.schedule()
	if got := launched(p)["G"]; got != 0 {
		t.Errorf("a gang of 3 with room for 2: %d launched, want none", got)
	}
	if len(p.UnplacedGangs) == 0 {
		t.Errorf("unplaced gangs %v: want the gang named", p.UnplacedGangs)
	}
	if !p.Apps["G"].GangWaitingSince.Equal(t0) {
		t.Errorf("the gang waits since %v, want %v", p.Apps["G"].GangWaitingSince, t0)
	}
}

// A gang that has waited --gang-reserve-after holds back the apps behind
// it, which say why; a gang that could never fit holds nobody back.
func TestGangHoldsCapacityAfterItsWait(t *testing.T) {
	build := func(gang int) *cluster {
		cl := newCluster(t)
		cl.worker("w1", 4, 4096)
		cl.worker("w2", 4, 4096)
		x := cl.app("X", wire.DefaultQueue, 0, 2, 100)
		cl.run(x, "w1")
		cl.run(x, "w2")
		g := cl.gangApp("G", gang, 2)
		g.GangWaitingSince = t0.Add(-3 * time.Minute)
		cl.app("S", wire.DefaultQueue, 0, 1, 100)
		return cl
	}
	cl := build(4) // 4 of 2 cores: the workers empty hold it, not now
	p := cl.schedule()
	if got := launched(p); got["G"] != 0 || got["S"] != 0 {
		t.Errorf("launches %v: want none while the gang holds capacity", got)
	}
	if p.GangHolds["S"] != "G" || !p.GangHoldsDecided {
		t.Errorf("gang holds %v, want S held for G", p.GangHolds)
	}
	sv := cl.status(true, p)
	if why := sv.AppWaiting(&cl.apps[2].App); !strings.Contains(why, "capacity is held for gang app G") {
		t.Errorf("the small app says %q", why)
	}
	if why := sv.AppWaiting(&cl.apps[1].App); !strings.Contains(why, "capacity is held for it as it frees") {
		t.Errorf("the gang says %q", why)
	}

	cl = build(5) // 5 of 2 cores never fit on two 4-core workers
	if got := launched(cl.schedule()); got["S"] != 1 {
		t.Errorf("launches %v: a gang that never fits must hold nobody back", got)
	}
}

// A gang being restarted gets nothing until its last member is gone; then
// it forms anew.
func TestGangRestartWaitsForItsMembers(t *testing.T) {
	cl := newCluster(t)
	cl.worker("w1", 8, 8192)
	g := cl.gangApp("G", 2, 2)
	cl.run(g, "w1")
	g.GangRestarting = true
	if p := cl.schedule(); launched(p)["G"] != 0 {
		t.Errorf("a gang being restarted with a member left got %d executors", launched(p)["G"])
	}
	cl = newCluster(t)
	cl.worker("w1", 8, 8192)
	cl.gangApp("G", 2, 2).GangRestarting = true
	p := cl.schedule()
	if launched(p)["G"] != 2 || p.Apps["G"].GangRestarting {
		t.Errorf("once its members are gone: %d launched, restarting %v; want the gang placed anew", launched(p)["G"], p.Apps["G"].GangRestarting)
	}
}
