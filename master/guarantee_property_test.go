package master

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/berth-cluster/berth/wire"
)

// Guarantees under preemption, over random clusters and executor shapes:
// queue etl, guaranteed g cores that the cluster has, wants g cores in
// executors of c cores (c fits a worker); default's apps, of fixed sizes
// or none, with or without a max, hold every core. Within the preemption
// delay, the victims' grace and a few rounds, etl holds its g cores,
// whatever the sizes of what it must take; preemption takes no more than
// default ran (a loop takes without end: 1,424 in 35 s); and afterwards
// no app waits beside room it could use (the room held for etl is given
// back) or says a false reason.
func TestAGuaranteeIsReachedOverRandomShapes(t *testing.T) {
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 33))
		h := newLeader(t, func(c *Config) { c.PreemptionDelay = 2 * time.Second; c.PreemptionGrace = time.Second })
		total, largest := 0, 0
		for i := range 2 + rng.IntN(3) {
			cores := 2 + rng.IntN(7)
			h.addWorker(fmt.Sprintf("w%d", i+1), cores, 8192)
			total, largest = total+cores, max(largest, cores)
		}
		c := 1 + rng.IntN(min(largest, 3))
		g := c * (1 + rng.IntN(max(total/2/c, 1)))
		if _, err := h.setQueue("etl", wire.QueueSpec{Guarantee: &wire.Amount{Cores: g}}); err != nil {
			t.Fatal(err)
		}
		var apps []*appInfo
		for range 1 + rng.IntN(3) {
			d := wire.AppDescription{Command: []string{"x"}, MemoryPerExecutorMB: 100}
			if rng.IntN(2) == 0 {
				d.CoresPerExecutor = 1 + rng.IntN(3)
			}
			if rng.IntN(2) == 0 {
				d.MaxCores = max(d.CoresPerExecutor, 1+rng.IntN(total))
			}
			apps = append(apps, h.addApp(d))
			for _, a := range apps {
				h.running(a)
			}
		}
		last := h.addApp(wire.AppDescription{Command: []string{"x"}, MemoryPerExecutorMB: 100}) // the rest: every core held
		apps = append(apps, last)
		for _, a := range apps {
			h.running(a)
		}
		ran := 0
		for _, a := range apps {
			ran += len(a.executors)
		}
		desc := fmt.Sprintf("seed %d: %d cores on %v, etl guaranteed %d in %d-core executors", seed, total, h.workerIDs(), g, c)
		etl := oneCoreApp("etl", 0)
		etl.CoresPerExecutor, etl.MaxCores = c, g
		e := h.addApp(etl)
		kills := h.settleStaggered(40, append(apps, e)...)
		if e.coresGranted != g {
			st := mustAppStatus(t, h, e.rec.ID)
			t.Errorf("%s: etl holds %s after %d preemptions, want %d cores; it says %q", desc, layout(e), kills, g, st.Waiting)
			continue
		}
		if kills > ran {
			t.Errorf("%s: %d executors preempted, more than the %d default ran", desc, kills, ran)
		}
		for _, a := range apps {
			if w := h.roomFor(a); w != "" {
				t.Errorf("%s: app %s (%d cores per executor, max %d) holds %s and waits beside room on %s", desc, a.rec.ID, a.rec.Desc.CoresPerExecutor, a.rec.Desc.MaxCores, layout(a), w)
			}
			if why := h.falseReason(a, mustAppStatus(t, h, a.rec.ID).Waiting); why != "" {
				t.Errorf("%s: app %s: %s", desc, a.rec.ID, why)
			}
		}
	}
}
