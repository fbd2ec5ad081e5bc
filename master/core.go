package master

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/berth-cluster/berth/persistence"
	"github.com/berth-cluster/berth/placement"
	"github.com/berth-cluster/berth/wire"
)

// effects is everything core asks of the outside world. The real one does
// I/O; tests record the calls.
type effects interface {
	// persist writes cmds through the engine; then runs in the loop once
	// the write is durable (err nil) or failed.
	persist(cmds []persistence.Command, then func(err error))
	// send queues a command for a worker; commands to one worker are
	// delivered in the order sent. A command that cannot be delivered comes
	// back through core.commandFailed.
	send(w *workerInfo, cmd workerCommand)
	// resend abandons a command in flight to the worker, if any, and sends
	// it again at once on a new connection: the worker has just been heard
	// from again (it registered), while an attempt made during its outage
	// may sit on a connection in TCP's retransmission backoff.
	resend(w *workerInfo)
	// prepareLeadership runs, off the loop, what a new leader does before
	// acting: Barrier, bump the epoch (and record this master's address)
	// through the log, and read the state; it ends in core.leadershipReady.
	prepareLeadership(gen uint64)
	// dropOutbound discards every queued command: leadership is gone.
	dropOutbound()
	// leaderAddress is the API address of the current leader, "" if none
	// is known; asked only when this master does not lead.
	leaderAddress() string
	// probeWorker asks, off the loop and after p.delay, whether anything
	// listens at a worker's API address (worker_probe.go); the answer
	// comes back through core.probeDone.
	probeWorker(p probeRequest)
}

// core is the master's state and its transitions. Only the loop touches it.
type core struct {
	cfg    Config
	log    *slog.Logger
	clock  Clock
	fx     effects
	policy placement.Policy

	status wire.MasterStatus
	// gen counts leadership changes; a continuation that finds it changed
	// belongs to a leadership that is over.
	gen   uint64
	epoch uint64
	// preparing: elected, but Barrier/epoch/state not done yet.
	preparing        bool
	leaderSince      time.Time // when this leadership began
	recoveryDeadline time.Time
	needSchedule     bool
	lastTick         time.Time // when tick last ran, to notice a paused loop

	workers          map[string]*workerInfo // by id, DEAD ones until reaped
	workerByAddr     map[string]*workerInfo // host:port of workers not DEAD
	deadAt           map[string][]string    // host:port → ids of DEAD workers there
	workersByID      []*workerInfo          // all workers sorted by id (putWorker, dropWorker)
	apps             map[string]*appInfo    // active
	appOrder         []*appInfo             // active, in registration order (FIFO)
	completedApps    []*appInfo             // oldest first
	drivers          map[string]*driverInfo // active
	waitingDrivers   []*driverInfo
	completedDrivers []*driverInfo
	keys             submissionKeys // idempotency keys of submissions
	registering      inFlight       // submissions being written, counted by the caps
	metrics          *metrics
	nextAppNumber    int
	nextDriverNumber int
	// index keeps the schedulable workers in the policy's order between
	// rounds (placement.Index); dirty names the workers changed since the
	// last round, put again (or removed) before the next.
	index       *placement.Index
	dirty       map[string]struct{}
	workerViews workerViews
	// capacity is what the index's workers offer (capacity.go), the total
	// the scheduler's fair shares divide (scheduler.View.Capacity); queues
	// and tenants as the committed state has them (queues.go, tenants.go).
	capacity clusterCapacity
	queues   map[string]*queueInfo
	tenants  map[string]*persistence.TenantRecord
	// sharedWrites runs the writes of queues and tenants one at a time,
	// each deciding against what those before it committed (inTurn,
	// commit.go).
	sharedWrites serial
	// req is the audit tag of the request being served (audit.go), set
	// while its transition runs: its first write carries the entry.
	req *auditTag
	// refusals ration what each principal's refusals write to the audit
	// log (audit_budget.go).
	refusals refusalRations
	// writes ration what each tenant may change (audit_budget.go).
	writes writeRations
	// round is what one scheduling round leaves for the next
	// (round_memory.go).
	round roundMemory
	// inheritedPreemptions are the executors a former leader marked for
	// preemption, not yet killed by this one.
	inheritedPreemptions map[*executorInfo]struct{}
	// seq numbers the executors as they are placed (or recovered, oldest
	// first): preemption takes the highest first.
	seq uint64
	// failures: processes that failed, by worker, within the exclusion
	// window (exclusions.go).
	failures failureLog
	// probes: the workers whose heartbeat connection closed, being
	// probed (worker_probe.go).
	probes workerProbes
	// slots name the workers to the scheduler (fleet.go).
	slots workerSlots
}

func newCore(cfg Config, log *slog.Logger, clock Clock, fx effects) (*core, error) {
	p, err := cfg.placementPolicy()
	if err != nil {
		return nil, err
	}
	c := &core{cfg: cfg, log: log, clock: clock, fx: fx, policy: p, status: wire.MasterStandby, metrics: newMetrics()}
	// Keyed writes in flight outlive a leadership: their continuations
	// still run and answer the repeats that wait on them.
	c.keys.inFlight = map[submissionKey]*keyedWrite{}
	c.reset()
	return c, nil
}

// reset forgets everything but the configuration.
func (c *core) reset() {
	c.workers = map[string]*workerInfo{}
	c.workerByAddr = map[string]*workerInfo{}
	c.deadAt = map[string][]string{}
	c.workersByID = nil
	c.apps = map[string]*appInfo{}
	c.appOrder = nil
	c.completedApps = nil
	c.drivers = map[string]*driverInfo{}
	c.waitingDrivers = nil
	c.completedDrivers = nil
	c.keys.ids = map[submissionKey]string{}
	c.needSchedule = false
	c.index = placement.NewIndex(c.policy)
	c.dirty = map[string]struct{}{}
	c.workerViews = workerViews{}
	c.capacity = clusterCapacity{}
	c.queues = map[string]*queueInfo{wire.DefaultQueue: {rec: defaultQueue()}}
	c.tenants = map[string]*persistence.TenantRecord{}
	c.round.reclaiming = map[string]int{}
	c.failures = failureLog{}
	c.probes.active = nil // seq goes on: a late answer must not pass for a new sequence's
	c.refusals = refusalRations{}
	c.writes = writeRations{}
	c.inheritedPreemptions = map[*executorInfo]struct{}{}
	c.slots = workerSlots{}
	c.round.heldForGang = nil
	c.round.roomHolds = nil
}

func (c *core) now() time.Time { return c.clock.Now() }

// leading reports whether this master leads and has its state: requests
// that change state are served only then.
func (c *core) leading() bool { return c.status != wire.MasterStandby && !c.preparing }

// idTime formats the time part of app and driver ids, in UTC.
func idTime(t time.Time) string { return t.UTC().Format("20060102150405") }

func (c *core) newAppID() string {
	id := fmt.Sprintf("app-%s-%04d", idTime(c.now()), c.nextAppNumber)
	c.nextAppNumber++
	return id
}

func (c *core) newDriverID() string {
	id := fmt.Sprintf("driver-%s-%04d", idTime(c.now()), c.nextDriverNumber)
	c.nextDriverNumber++
	return id
}

// schedule asks for a scheduling pass once the current event is handled;
// bursts of events then cost one pass.
func (c *core) schedule() { c.needSchedule = true }

// nextSeq is the next executor's rank by age.
func (c *core) nextSeq() uint64 {
	c.seq++
	return c.seq
}
