package master

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/berth-cluster/berth/admission"
	"github.com/berth-cluster/berth/persistence"
	"github.com/berth-cluster/berth/wire"
)

// setQueue creates or changes a queue through the core.
func (h *harness) setQueue(name string, spec wire.QueueSpec) (wire.QueueStatus, error) {
	h.t.Helper()
	return run(h, func(r reply[wire.QueueStatus]) { h.c.putQueue(name, spec, r) })
}

func weight(w float64) *float64 { return &w }
func boolp(b bool) *bool        { return &b }

// oneCoreApp is an app of unlimited one-core executors of 100 MB in queue q.
func oneCoreApp(q string, priority int) wire.AppDescription {
	return wire.AppDescription{Command: []string{"x"}, CoresPerExecutor: 1, MemoryPerExecutorMB: 100, ProcessSpec: wire.ProcessSpec{Queue: q, Priority: priority}}
}

// running reports every launched executor of a RUNNING.
func (h *harness) running(a *appInfo) {
	h.t.Helper()
	for _, e := range sortedExecutors(a.executors) {
		if e.state != wire.ExecutorRunning && !e.launching {
			h.report(e, wire.ExecutorRunning, nil)
		}
	}
}

// Two queues of equal weight share an 8-core worker 4 and 4; a weight of
// 3 makes it 6 and 2; a queue alone takes everything (work-conserving).
func TestQueuesShareByWeightedDominantShare(t *testing.T) {
	for _, c := range []struct {
		name        string
		wa, wb      float64
		wantA, want int
	}{{"equal weights", 1, 1, 4, 4}, {"weights 3 and 1", 3, 1, 6, 2}} {
		t.Run(c.name, func(t *testing.T) {
			h := newLeader(t, nil)
			h.addWorker("w1", 8, 8192)
			for name, w := range map[string]float64{"a": c.wa, "b": c.wb} {
				if _, err := h.setQueue(name, wire.QueueSpec{Weight: weight(w)}); err != nil {
					t.Fatal(err)
				}
			}
			// Both apps are placed in one round, as they arrive together.
			a := h.addAppNoSchedule(oneCoreApp("a", 0))
			b := h.addAppNoSchedule(oneCoreApp("b", 0))
			h.c.schedule()
			h.commit()
			if len(a.executors) != c.wantA || len(b.executors) != c.want {
				t.Errorf("queue a has %d executors, b %d; want %d and %d", len(a.executors), len(b.executors), c.wantA, c.want)
			}
		})
	}
	h := newLeader(t, nil)
	h.addWorker("w1", 8, 8192)
	h.setQueue("a", wire.QueueSpec{})
	h.setQueue("b", wire.QueueSpec{})
	a := h.addApp(oneCoreApp("a", 0))
	if len(a.executors) != 8 {
		t.Errorf("a queue alone got %d executors of 8 cores, want all 8", len(a.executors))
	}
}

// addAppNoSchedule registers an app and commits its record without the
// scheduling pass that would place it at once.
func (h *harness) addAppNoSchedule(desc wire.AppDescription) *appInfo {
	h.t.Helper()
	var id string
	h.c.registerApp(desc, keyed{}, func(v wire.Submitted, err error) {
		if err != nil {
			h.t.Fatal(err)
		}
		id = v.ID
	})
	for len(h.fx.pending) > 0 {
		p := h.fx.pending[0]
		h.fx.pending = h.fx.pending[1:]
		for _, c := range p.cmds {
			h.fx.state.Apply(c, nil)
		}
		p.then(nil)
	}
	h.c.needSchedule = false
	return h.c.apps[id]
}

// A guarantee is served first; a limit is never passed, and what it
// leaves goes to others; the waiting app says why.
func TestGuaranteesAndLimits(t *testing.T) {
	h := newLeader(t, nil)
	h.addWorker("w1", 8, 8192)
	h.setQueue("etl", wire.QueueSpec{Guarantee: &wire.Amount{Cores: 6}})
	h.setQueue("adhoc", wire.QueueSpec{Limit: &wire.Amount{Cores: 1}})
	a := h.addAppNoSchedule(oneCoreApp("etl", 0))
	b := h.addAppNoSchedule(oneCoreApp("adhoc", 0))
	h.c.schedule()
	h.commit()
	if len(a.executors) != 7 || len(b.executors) != 1 {
		t.Errorf("etl %d executors, adhoc %d; want 7 (6 guaranteed, 1 left by adhoc's limit) and 1", len(a.executors), len(b.executors))
	}
	st := mustAppStatus(t, h, b.rec.ID)
	if !strings.Contains(st.Waiting, "queue adhoc at its limit (cores 1)") {
		t.Errorf("adhoc's app says %q, want its queue's limit", st.Waiting)
	}
	q, _ := h.c.queuesStatus()
	for _, qs := range q.Queues {
		if qs.Name == "etl" && (qs.InUse.Cores != 7 || qs.FairShare.Cores != 7) {
			t.Errorf("etl's status %+v", qs)
		}
	}
}

// Within a queue, a higher priority is served first.
func TestPriorityWithinAQueue(t *testing.T) {
	h := newLeader(t, nil)
	h.addWorker("w1", 4, 8192)
	low := h.addAppNoSchedule(oneCoreApp("default", 0))
	high := h.addAppNoSchedule(oneCoreApp("default", 5))
	h.c.schedule()
	h.commit()
	if len(high.executors) != 4 || len(low.executors) != 0 {
		t.Errorf("priority 5 got %d executors, priority 0 %d; want 4 and 0", len(high.executors), len(low.executors))
	}
}

// A queue owed its fair share takes it back after the delay: the most
// recent executors of the queue above its share are preempted (written,
// then killed with the preemption grace, their app told), then the owed
// queue gets the room. Before the delay, its app says what will be
// reclaimed and when.
func TestPreemptionTakesBackTheFairShare(t *testing.T) {
	h := newLeader(t, func(c *Config) { c.PreemptionDelay = 10 * time.Second; c.PreemptionGrace = 3 * time.Second })
	h.addWorker("w1", 8, 8192)
	h.setQueue("batch", wire.QueueSpec{})
	h.setQueue("etl", wire.QueueSpec{})
	batch := h.addApp(oneCoreApp("batch", 0))
	h.running(batch)
	if len(batch.executors) != 8 {
		t.Fatalf("batch has %d executors, want all 8 cores", len(batch.executors))
	}
	h.takeSent(wire.WorkerAPI.LaunchExecutor.Pattern)
	etl := h.addApp(oneCoreApp("etl", 0))
	if len(etl.executors) != 0 {
		t.Fatal("etl placed with no room free")
	}
	h.pass(5*time.Second, "w1")
	if st := mustAppStatus(t, h, etl.rec.ID); !strings.Contains(st.Waiting, "cores 4, memory 400 MB from queue batch to be reclaimed in") {
		t.Errorf("before the delay, etl's app says %q", st.Waiting)
	}
	if kills := h.takeSent(wire.WorkerAPI.KillExecutor.Pattern); len(kills) != 0 {
		t.Fatalf("%d kills before the delay", len(kills))
	}
	h.pass(6*time.Second, "w1")
	kills := h.takeSent(wire.WorkerAPI.KillExecutor.Pattern)
	if len(kills) != 4 {
		t.Fatalf("%d executors preempted, want 4 (down to batch's fair share)", len(kills))
	}
	for _, k := range kills {
		body := k.cmd.body.(wire.KillExecutor)
		if body.ExecutorID < 4 || body.GraceMs != 3000 {
			t.Errorf("killed executor %d with grace %d ms; want the 4 most recent (4..7) with 3000", body.ExecutorID, body.GraceMs)
		}
		if rec := h.fx.state.Executors[persistence.ExecutorKey(batch.rec.ID, body.ExecutorID)]; rec == nil || rec.PreemptedFor != "for queue etl" {
			t.Errorf("executor %d's record %+v does not say it is preempted", body.ExecutorID, rec)
		}
		e := batch.executors[body.ExecutorID]
		h.report(e, wire.ExecutorKilled, intp(143))
		if !strings.HasPrefix(e.message, "preempted for queue etl") {
			t.Errorf("the preempted executor ended %q", e.message)
		}
	}
	h.pass(time.Second, "w1")
	if len(etl.executors) != 4 || len(batch.executors) != 4 {
		t.Errorf("after the preemption: etl %d executors, batch %d; want 4 and 4", len(etl.executors), len(batch.executors))
	}
	if h.c.queues["batch"].preemptions != 4 {
		t.Errorf("batch counts %d preemptions", h.c.queues["batch"].preemptions)
	}
}

// A queue that refuses preemption keeps what it holds; a preemption in
// progress is carried through by a new leader, which kills each marked
// executor once.
func TestPreemptionRefusedAndCarriedThroughAFailover(t *testing.T) {
	h := newLeader(t, func(c *Config) { c.PreemptionDelay = time.Second })
	h.addWorker("w1", 4, 8192)
	h.setQueue("keep", wire.QueueSpec{Preempt: boolp(false)})
	h.setQueue("want", wire.QueueSpec{})
	keep := h.addApp(oneCoreApp("keep", 0))
	h.running(keep)
	h.addApp(oneCoreApp("want", 0))
	h.pass(3*time.Second, "w1")
	if kills := h.takeSent(wire.WorkerAPI.KillExecutor.Pattern); len(kills) != 0 {
		t.Fatalf("%d executors taken from a queue that refuses preemption", len(kills))
	}

	h2 := newLeader(t, func(c *Config) { c.PreemptionDelay = time.Second })
	h2.addWorker("w1", 4, 8192)
	h2.setQueue("a", wire.QueueSpec{})
	h2.setQueue("b", wire.QueueSpec{})
	a := h2.addApp(oneCoreApp("a", 0))
	h2.running(a)
	h2.addApp(oneCoreApp("b", 0))
	h2.pass(500*time.Millisecond, "w1")
	h2.pass(time.Second, "w1") // due: the preemption is written and sent
	if n := len(h2.takeSent(wire.WorkerAPI.KillExecutor.Pattern)); n != 2 {
		t.Fatalf("%d preempted, want 2", n)
	}
	h3 := successor(t, h2, func(c *Config) { c.PreemptionDelay = time.Second })
	if err := h3.reregister(h3.c.workers["w1"], "w1-1"); err != nil {
		t.Fatal(err)
	}
	var reports []wire.ExecutorReport
	for _, e := range sortedExecutors(h3.c.apps[a.rec.ID].executors) {
		reports = append(reports, wire.ExecutorReport{AppID: a.rec.ID, ExecutorID: e.id, Cores: e.cores, MemoryMB: e.memory, State: wire.ExecutorRunning})
	}
	if _, err := h3.c.workerLatestState("w1", wire.WorkerLatestState{WorkerID: "w1", Executors: reports}); err != nil {
		t.Fatal(err)
	}
	h3.commit()
	h3.pass(time.Second, "w1")
	kills := h3.takeSent(wire.WorkerAPI.KillExecutor.Pattern)
	h3.pass(2*time.Second, "w1")
	again := h3.takeSent(wire.WorkerAPI.KillExecutor.Pattern)
	if len(kills) != 2 || len(again) != 0 {
		t.Errorf("the new leader sent %d kills, then %d; want the 2 marked, once", len(kills), len(again))
	}
}

// Bad queue settings are refused with a reason and change nothing; a queue
// with work, and the default queue, cannot be deleted.
func TestQueueSettingsRefused(t *testing.T) {
	h := newLeader(t, nil)
	h.addGPUWorker("w1", 8, "0", "1")
	for _, c := range []struct {
		name string
		spec wire.QueueSpec
		want string
	}{
		{"too-much", wire.QueueSpec{Guarantee: &wire.Amount{Cores: 9}}, "more than the workers offer"},
		{"tpu", wire.QueueSpec{Guarantee: &wire.Amount{Resources: wire.ResourceAmounts{"tpu": 1}}}, `no worker offers resource "tpu"`},
		{"gpus", wire.QueueSpec{Guarantee: &wire.Amount{Resources: wire.ResourceAmounts{"gpu": 3}}}, "gpu=3"},
		{"upside-down", wire.QueueSpec{Guarantee: &wire.Amount{Cores: 4}, Limit: &wire.Amount{Cores: 2}}, "above its limit"},
	} {
		if _, err := h.setQueue(c.name, c.spec); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("queue %s: %v, want an error saying %q", c.name, err, c.want)
		}
		if h.fx.state.Queues[c.name] != nil {
			t.Errorf("queue %s was written", c.name)
		}
	}
	if err := admission.QueueSpec(wire.QueueSpec{Weight: weight(0)}); err == nil {
		t.Error("weight 0 accepted")
	}
	// Settings left out stay as they were.
	h.setQueue("etl", wire.QueueSpec{Weight: weight(2), Guarantee: &wire.Amount{Cores: 2}})
	st, err := h.setQueue("etl", wire.QueueSpec{Preempt: boolp(false)})
	if err != nil || st.Weight != 2 || st.Guarantee.Cores != 2 || st.Preempt {
		t.Errorf("after changing preempt alone: %+v %v", st, err)
	}
	h.addApp(oneCoreApp("etl", 0))
	del := func(name string) error {
		_, err := run(h, func(r reply[wire.None]) { h.c.deleteQueue(name, r) })
		return err
	}
	if err := del("etl"); statusOf(err) != http.StatusConflict || !strings.Contains(err.Error(), "holds 1 active apps") {
		t.Errorf("deleting a queue with an app: %v", err)
	}
	if err := del(wire.DefaultQueue); statusOf(err) != http.StatusConflict {
		t.Errorf("deleting the default queue: %v", err)
	}
	if err := del("nope"); statusOf(err) != http.StatusNotFound {
		t.Errorf("deleting an unknown queue: %v", err)
	}
}

// A tenant submits into its queues only; its token's hash is written, not
// the token; an app it submits is its own.
func TestTenantsSubmitIntoTheirQueues(t *testing.T) {
	h := newLeader(t, nil)
	h.addWorker("w1", 4, 8192)
	h.setQueue("etl", wire.QueueSpec{})
	h.setQueue("other", wire.QueueSpec{})
	created, err := run(h, func(r reply[wire.TenantCreated]) {
		h.c.createTenant("team-a", wire.TenantSpec{Queues: []string{"etl"}}, r)
	})
	if err != nil || !strings.HasPrefix(created.Token, wire.TenantTokenPrefix+"team-a.") {
		t.Fatalf("created %+v %v", created, err)
	}
	if rec := h.fx.state.Tenants["team-a"]; rec == nil || rec.TokenHash != tokenHash(created.Token) || strings.Contains(rec.TokenHash, created.Token) {
		t.Errorf("the tenant's record %+v", rec)
	}
	if _, err := run(h, func(r reply[wire.TenantCreated]) {
		h.c.createTenant("team-b", wire.TenantSpec{Queues: []string{"nope"}}, r)
	}); err == nil {
		t.Error("a tenant with an unknown queue was created")
	}
	submit := func(q string) (wire.Submitted, error) {
		return run(h, func(r reply[wire.Submitted]) { h.c.registerApp(oneCoreApp(q, 0), keyed{tenant: "team-a"}, r) })
	}
	if _, err := submit("other"); statusOf(err) != http.StatusForbidden {
		t.Errorf("into another queue: %v, want 403", err)
	}
	if _, err := submit("missing"); statusOf(err) != http.StatusBadRequest || !strings.Contains(err.Error(), `"missing"`) {
		t.Errorf("into an unknown queue: %v, want 400 naming it", err)
	}
	s, err := submit("etl")
	if err != nil || h.c.apps[s.ID].rec.Tenant != "team-a" {
		t.Fatalf("into its queue: %v", err)
	}
	if _, err := run(h, func(r reply[wire.None]) { h.c.deleteTenant("team-a", r) }); err != nil {
		t.Fatal(err)
	}
	if h.fx.state.Tenants["team-a"] != nil || h.c.apps[s.ID] == nil {
		t.Error("the deleted tenant's record is still there, or its app is gone")
	}
}

// A request's first write carries its audit entry; a refused one writes
// its own.
func TestAuditEntriesGoWithTheirWrites(t *testing.T) {
	h := newLeader(t, nil)
	h.c.req = &auditTag{route: "PUT /v1/queues/{id}", target: "etl"}
	h.c.req.principal.Kind = 1
	h.setQueue("etl", wire.QueueSpec{})
	h.c.req = nil
	if n := len(h.fx.state.Audit); n != 1 || h.fx.state.Audit[0].Target != "etl" || h.fx.state.Audit[0].Outcome != "ok" {
		t.Fatalf("audit log %+v, want the queue's entry", h.fx.state.Audit)
	}
}

// A tenant's Unix user goes with its processes' launches, for workers with
// --run-as dynamic to run them as that user.
func TestATenantsUnixUserGoesWithItsLaunches(t *testing.T) {
	h := newLeader(t, nil)
	h.addWorker("w1", 4, 8192)
	if _, err := run(h, func(r reply[wire.TenantCreated]) {
		h.c.createTenant("team", wire.TenantSpec{Queues: []string{wire.DefaultQueue}, UnixUser: "team_a"}, r)
	}); err != nil {
		t.Fatal(err)
	}
	desc := oneCoreApp(wire.DefaultQueue, 0)
	desc.MaxCores = 1
	v, err := run(h, func(r reply[wire.Submitted]) { h.c.registerApp(desc, keyed{tenant: "team"}, r) })
	if err != nil {
		t.Fatal(err)
	}
	launches := h.takeSent(wire.WorkerAPI.LaunchExecutor.Pattern)
	if len(launches) != 1 || launches[0].cmd.body.(wire.LaunchExecutor).User != "team_a" {
		t.Errorf("launches %+v, want one as user team_a", launches)
	}

	// The tenant deleted, its app's next executor runs as the same user
	// (not as an identity of its own, which would lock the running one
	// out of the app's directories).
	if _, err := run(h, func(r reply[wire.None]) { h.c.deleteTenant("team", r) }); err != nil {
		t.Fatal(err)
	}
	a := h.c.apps[v.ID]
	for _, e := range sortedExecutors(a.executors) {
		h.report(e, wire.ExecutorFailed, intp(1))
	}
	h.pass(2*time.Second, "w1")
	launches = h.takeSent(wire.WorkerAPI.LaunchExecutor.Pattern)
	if len(launches) != 1 || launches[0].cmd.body.(wire.LaunchExecutor).User != "team_a" {
		t.Errorf("after the tenant's deletion, launches %+v, want one as user team_a", launches)
	}
	// A tenant of the same name would take over its app: refused meanwhile.
	if _, err := run(h, func(r reply[wire.TenantCreated]) {
		h.c.createTenant("team", wire.TenantSpec{Queues: []string{wire.DefaultQueue}}, r)
	}); statusOf(err) != http.StatusConflict || !strings.Contains(err.Error(), "still run") {
		t.Errorf("re-creating a deleted tenant whose app runs: %v, want 409", err)
	}
}

// What a queue is owed never makes an executor smaller than the core unit:
// with a unit of 4 and a worker of 2 cores, an app of any size waits.
func TestOwedCoresKeepTheCoreUnit(t *testing.T) {
	h := newLeader(t, func(c *Config) { c.MinCoreUnit = 4 })
	h.addWorker("w1", 2, 4096)
	a := h.addApp(wire.AppDescription{Command: []string{"x"}})
	if len(a.executors) != 0 {
		t.Fatalf("%s: an executor below the core unit was placed", layout(a))
	}
	if st := mustAppStatus(t, h, a.rec.ID); !strings.Contains(st.Waiting, "cannot start: the core unit 4 fits on no worker") {
		t.Errorf("it says %q", st.Waiting)
	}
}

// A guarantee that names cores only is served in the shape of what the
// queue runs: once preemption has taken back enough, the queue holds its
// guaranteed cores and nothing more is killed (a guarantee read as cores
// without memory was never usable, and preemption went round for ever).
func TestACoresOnlyGuaranteeSettles(t *testing.T) {
	h := newLeader(t, func(c *Config) { c.PreemptionDelay = time.Second; c.PreemptionGrace = time.Second })
	h.addWorker("w1", 8, 8192)
	h.setQueue("etl", wire.QueueSpec{Guarantee: &wire.Amount{Cores: 6}})
	h.setQueue("x", wire.QueueSpec{})
	etl := oneCoreApp("etl", 0)
	etl.MaxCores = 3
	small := h.addApp(etl) // 3 of etl's
	h.running(small)
	x := h.addApp(oneCoreApp("x", 0)) // the other 5
	h.running(x)
	big := h.addApp(oneCoreApp("etl", 0)) // etl wants more: 3 more to its guarantee
	kills := 0
	for range 20 { // 20 s, many preemption delays and graces
		h.pass(time.Second, "w1")
		for _, k := range h.takeSent(wire.WorkerAPI.KillExecutor.Pattern) {
			kills++
			body := k.cmd.body.(wire.KillExecutor)
			if e := h.c.apps[body.AppID].executors[body.ExecutorID]; e != nil {
				h.report(e, wire.ExecutorKilled, intp(143))
			}
		}
		h.running(big)
		h.running(x)
	}
	if held := len(small.executors) + len(big.executors); held != 6 || len(x.executors) != 2 {
		t.Errorf("etl holds %d, x %d; want 6 (its guarantee) and 2", held, len(x.executors))
	}
	if kills != 3 {
		t.Errorf("%d executors preempted, want the 3 etl's guarantee needed, and no more", kills)
	}
}

// A preemption's grace no worker would honour is refused at start.
func TestPreemptionGraceBounded(t *testing.T) {
	if _, err := (Config{ID: "m1", Advertise: "http://127.0.0.1:7077", PreemptionGrace: wire.MaxKillGrace + time.Second}).WithDefaults(); err == nil || !strings.Contains(err.Error(), "--preemption-grace") {
		t.Errorf("a grace above %s: %v, want a refusal naming --preemption-grace", wire.MaxKillGrace, err)
	}
	if _, err := (Config{ID: "m1", Advertise: "http://127.0.0.1:7077", PreemptionGrace: wire.MaxKillGrace}).WithDefaults(); err != nil {
		t.Error(err)
	}
}

// A driver its queue's limit holds back says so, whatever the queue's
// apps do; a waiting driver is its queue's demand.
func TestADriverHeldByItsQueuesLimitSaysWhy(t *testing.T) {
	h := newLeader(t, nil)
	h.addWorker("w1", 8, 8192)
	h.setQueue("small", wire.QueueSpec{Limit: &wire.Amount{Cores: 2}})
	big := h.addDriver(wire.DriverDescription{Command: []string{"d"}, Cores: 4, MemoryMB: 64, ProcessSpec: wire.ProcessSpec{Queue: "small"}})
	first := h.addDriver(wire.DriverDescription{Command: []string{"d"}, Cores: 2, MemoryMB: 64, ProcessSpec: wire.ProcessSpec{Queue: "small"}})
	second := h.addDriver(wire.DriverDescription{Command: []string{"d"}, Cores: 1, MemoryMB: 64, ProcessSpec: wire.ProcessSpec{Queue: "small"}})
	h.commit()
	st := h.statusOf()
	why := map[string]string{}
	for _, d := range st.ActiveDrivers {
		why[d.ID] = d.Waiting
	}
	if !strings.Contains(why[big], "more than queue small's limit") {
		t.Errorf("a driver larger than its queue's limit says %q", why[big])
	}
	if why[first] != "" {
		t.Errorf("the driver within the limit waits: %q", why[first])
	}
	if !strings.Contains(why[second], "queue small at its limit (cores 2, 2 in use)") {
		t.Errorf("a driver the limit holds back says %q", why[second])
	}
	q, _ := h.c.queuesStatus()
	for _, qs := range q.Queues {
		if qs.Name == "small" && qs.Waiting.Cores != 5 {
			t.Errorf("queue small's waiting demand %+v, want the 5 cores of its waiting drivers", qs.Waiting)
		}
	}
}
