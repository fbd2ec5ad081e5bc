package master

import (
	"maps"
	"net/http"
	"slices"
	"time"

	"github.com/berth-cluster/berth/admission"
	"github.com/berth-cluster/berth/internal/httpx"
	"github.com/berth-cluster/berth/persistence"
	"github.com/berth-cluster/berth/scheduler"
	"github.com/berth-cluster/berth/wire"
)

// Queues (docs/QUEUES.md): each app and driver runs in one. At each
// scheduling round package scheduler divides the cluster between them by
// weighted DRF (scheduler/fairshare.go) and decides what to take back for
// a queue owed its share (scheduler/preempt.go); the master writes and
// sends those preemptions (preempt.go). Their settings are written through
// the log; what they hold and are owed is the leader's, kept in queueInfo
// from each round's plan (keepRound, schedule.go).

// queueInfo is a queue as the leader knows it.
type queueInfo struct {
	rec persistence.QueueRecord
	// preemptions counts the executors taken from it by this leadership.
	preemptions int
	// starvedSince: since when it has been owed capacity it could not get
	// (zero: it is not); preemption waits PreemptionDelay from then.
	starvedSince time.Time
	// Of the last scheduling round: what it held, was owed and waited
	// for, and why its apps got no more.
	view scheduler.QueueOutcome
}

// defaultQueue is the default queue's settings until an operator sets them.
func defaultQueue() persistence.QueueRecord {
	return persistence.QueueRecord{Name: wire.DefaultQueue, Weight: 1, Preempt: true}
}

// loadQueues builds the queues from a new leader's state.
func (c *core) loadQueues(s *persistence.State) {
	c.queues = map[string]*queueInfo{wire.DefaultQueue: {rec: defaultQueue()}}
	for name, r := range s.Queues {
		c.queues[name] = &queueInfo{rec: *r}
	}
}

// sortedQueues is the queues by name.
func (c *core) sortedQueues() []*queueInfo {
	names := slices.Sorted(maps.Keys(c.queues))
	out := make([]*queueInfo, len(names))
	for i, n := range names {
		out[i] = c.queues[n]
	}
	return out
}

// putQueue creates queue name or changes its settings: what spec gives
// replaces the queue's, what it leaves out stays (a new queue's defaults:
// weight 1, no guarantee, no limit, preemptible). Answered once durable.
func (c *core) putQueue(name string, spec wire.QueueSpec, answer reply[wire.QueueStatus]) {
	inTurn(c, answer, func(reply reply[wire.QueueStatus]) {
		if !c.leading() {
			reply.fail(c.notLeader())
			return
		}
		rec := persistence.QueueRecord{Name: name, Weight: 1, Preempt: true}
		if q := c.queues[name]; q != nil {
			rec = q.rec
		}
		if spec.Weight != nil {
			rec.Weight = *spec.Weight
		}
		if spec.Guarantee != nil {
			rec.Guarantee = *spec.Guarantee
		}
		if spec.Limit != nil {
			rec.Limit = spec.Limit
			if isZeroAmount(*spec.Limit) {
				rec.Limit = nil // {} clears it
			}
		}
		if spec.Preempt != nil {
			rec.Preempt = *spec.Preempt
		}
		if err := c.checkQueue(rec); err != nil {
			reply.fail(err)
			return
		}
		c.commit([]persistence.Command{persistence.PutQueue(rec)}, func() {
			if q := c.queues[name]; q != nil {
				q.rec = rec
			} else {
				c.queues[name] = &queueInfo{rec: rec}
			}
			c.log.Info("queue set", "queue", name, "weight", rec.Weight)
			c.schedule()
		}, func(err error) {
			if err != nil {
				reply.fail(err)
				return
			}
			// The answer is the record written, with what this master knows
			// of the queue: a durable write of an ended leadership is not
			// applied (commit), so a new queue is then in no map of this
			// master's (a master crashed on the nil: chaos, a leader frozen
			// past every timeout).
			answer := queueInfo{rec: rec}
			if q := c.queues[name]; q != nil { // name: the route's, checked (checkQueueName)
				answer = *q
				answer.rec = rec
			}
			reply(c.queueStatus(&answer), nil)
		})
	})
}

// checkQueue refuses settings the cluster cannot honour: the guarantees of
// every queue together beyond what the workers offer, or a resource no
// worker offers. With no worker registered yet there is nothing to check
// against, and settings are taken as they are.
func (c *core) checkQueue(rec persistence.QueueRecord) error {
	if err := admission.GuaranteeWithinLimit(&rec); err != nil {
		return err
	}
	offer := c.offered()
	if offer.workers == 0 {
		return nil
	}
	for field, a := range map[string]*wire.Amount{"guarantee": &rec.Guarantee, "limit": rec.Limit} {
		if a == nil {
			continue
		}
		for r := range a.Resources {
			if _, ok := offer.resources[r]; !ok {
				return badRequest("queue %s: %s: no worker offers resource %q", rec.Name, field, r)
			}
		}
	}
	total := rec.Guarantee
	for name, q := range c.queues {
		if name != rec.Name {
			total = addAmount(total, q.rec.Guarantee)
		}
	}
	if total.Cores > offer.cores || total.MemoryMB > offer.memory {
		return badRequest("queue %s: the queues' guarantees would add up to %d cores and %d MB, more than the workers offer (%d cores, %d MB)",
			rec.Name, total.Cores, total.MemoryMB, offer.cores, offer.memory)
	}
	for r, v := range total.Resources {
		if v > float64(offer.resources[r]) {
			return badRequest("queue %s: the queues' guarantees would add up to %s=%v, more than the workers offer (%d)", rec.Name, r, v, offer.resources[r])
		}
	}
	return nil
}

// offer is what the registered workers (not DEAD) offer in all.
type offer struct {
	workers, cores, memory int
	resources              map[string]int // addresses
}

func (c *core) offered() offer {
	o := offer{resources: map[string]int{}}
	for _, w := range c.sortedWorkerList() {
		if w.state == wire.WorkerDead {
			continue
		}
		o.workers++
		o.cores += w.rec.Cores
		o.memory += w.rec.MemoryMB
		for r, addrs := range w.rec.Resources {
			o.resources[r] += len(addrs)
		}
	}
	return o
}

// deleteQueue removes a queue that holds no active app or driver and that
// no tenant may submit into; the default queue stays.
func (c *core) deleteQueue(name string, answer reply[wire.None]) {
	inTurn(c, answer, func(reply reply[wire.None]) {
		switch q := c.queues[name]; {
		case !c.leading():
			reply.fail(c.notLeader())
			return
		case name == wire.DefaultQueue:
			reply.fail(httpx.Coded(http.StatusConflict, wire.CodeWrongState, "the default queue cannot be deleted (its settings can be changed)"))
			return
		case q == nil:
			reply.fail(httpx.Coded(http.StatusNotFound, wire.CodeUnknownQueue, "no queue %q", name))
			return
		}
		submitting := c.registering.queues[name]
		if apps, drivers := c.queueHolds(name); apps+drivers+submitting > 0 {
			reply.fail(httpx.Coded(http.StatusConflict, wire.CodeWrongState, "queue %s holds %d active apps and %d active drivers, %d more being submitted: kill them or let them end first", name, apps, drivers, submitting))
			return
		}
		for _, t := range c.sortedTenants() {
			if slices.Contains(t.Queues, name) {
				reply.fail(httpx.Coded(http.StatusConflict, wire.CodeWrongState, "tenant %s may submit into queue %s: delete the tenant first, or create it again without that queue", t.Name, name))
				return
			}
		}
		c.commit([]persistence.Command{persistence.DeleteQueue(name)}, func() {
			delete(c.queues, name)
			c.log.Info("queue deleted", "queue", name)
		}, func(err error) { reply(wire.None{}, err) })
	})
}

// queueHolds counts the active apps and drivers of queue name.
func (c *core) queueHolds(name string) (apps, drivers int) {
	for _, a := range c.appOrder {
		if a.spec.Queue == name {
			apps++
		}
	}
	for _, d := range c.drivers {
		if d.spec.Queue == name {
			drivers++
		}
	}
	return apps, drivers
}

// queuesStatus is GET /v1/queues.
func (c *core) queuesStatus() (wire.Queues, error) {
	if !c.leading() {
		return wire.Queues{}, c.notLeader()
	}
	out := wire.Queues{Capacity: c.capacity.amount(), Queues: []wire.QueueStatus{}}
	for _, q := range c.sortedQueues() {
		out.Queues = append(out.Queues, c.queueStatus(q))
	}
	return out, nil
}

func (c *core) queueStatus(q *queueInfo) wire.QueueStatus {
	apps, drivers := c.queueHolds(q.rec.Name)
	return wire.QueueStatus{
		Name: q.rec.Name, Weight: q.rec.Weight, Guarantee: q.rec.Guarantee, Limit: q.rec.Limit, Preempt: q.rec.Preempt,
		InUse: q.view.Usage, DominantShare: q.view.DominantShare, FairShare: q.view.Fair, FairDominantShare: q.view.FairDominantShare,
		Waiting: q.view.Waiting, Apps: apps, Drivers: drivers, Preemptions: q.preemptions, Reclaiming: q.view.Reclaiming,
	}
}

func isZeroAmount(a wire.Amount) bool {
	return a.Cores == 0 && a.MemoryMB == 0 && len(a.Resources) == 0
}

func addAmount(a, b wire.Amount) wire.Amount {
	out := wire.Amount{Cores: a.Cores + b.Cores, MemoryMB: a.MemoryMB + b.MemoryMB}
	for _, src := range []wire.ResourceAmounts{a.Resources, b.Resources} {
		for r, v := range src {
			if out.Resources == nil {
				out.Resources = wire.ResourceAmounts{}
			}
			out.Resources[r] += v
		}
	}
	return out
}

// checkQueueName is the path's {id} of a queue route.
func checkQueueName(name string) error {
	if err := wire.CheckQueueName("queue", name); err != nil {
		return badRequest("%v", err)
	}
	return nil
}
