// Package scheduler makes the master's scheduling decisions: given a View
// of the cluster (the workers' free room, the apps and drivers resolved to
// their queue, priority and constraints, the queues' settings, the time),
// Schedule returns a Plan (driver placements, executor launches with their
// ports and resources, executor id reservations, preemptions with their
// reasons, gang holds, and what each queue holds, is owed and waits for),
// which the master applies with its commit-first writes. It also says why
// an app or a driver waits (StatusView.AppWaiting, DriverWaiting), and
// what a failure does (failures.go: exclusions, unhealthy workers, the
// relaunch backoff, restart policies; GangEnd: gang restarts), rules the
// master calls with the values it records and the time.
//
// It does no I/O, starts no goroutine and does not import the master, but
// a View is not a copy: its Fleet and each app's History are the master's
// live workers and executors read through interfaces (so that a round
// costs what it decides, not the fleet's size), so Schedule and the
// StatusView's methods must run where that state cannot change meanwhile:
// the master's loop goroutine. They leave the view as they found it:
// Schedule decides on the view's Index (the master's own) under a
// checkpoint it rolls back before returning (View.Index), and only the
// Rooms memo and the Buffers are filled. The same view gives the same
// plan, however often it is asked.
package scheduler

import (
	"iter"
	"time"

	"github.com/berth-cluster/berth/placement"
	"github.com/berth-cluster/berth/wire"
)

// Config is the master's settings the decisions depend on.
type Config struct {
	MinCoreUnit      int           // --min-core-unit: the step of an app of no fixed executor size
	MaxDrivers       int           // --max-drivers; 0: no bound
	PreemptionDelay  time.Duration // how long a queue or an app is owed before preemption
	PreemptionGrace  time.Duration // how long an executor taken back has to end (holds.go)
	GangReserveAfter time.Duration // how long a gang waits before capacity is held for it
}

// View is what one scheduling round decides on. Schedule leaves it as it
// found it: its Index is rolled back before Schedule returns, and only the
// memo of Rooms and the storage of Buffers (which decide nothing) are
// filled.
type View struct {
	Now    time.Time
	Config Config
	// Index holds the placeable workers' free room in the policy's order,
	// up to date when Schedule is called. Schedule decides on it under a
	// checkpoint, taking each placement off it as it goes (so that each
	// app of the round sees what the apps before it took), and rolls it
	// back before it returns: the index is as it was handed in, and the
	// master puts the workers a plan placed on in it again once it has
	// applied the plan.
	Index Index
	// Fleet answers what the scheduler asks of single workers, and walks
	// them all when a decision needs every worker (drivers' ring, gangs,
	// the preemption view, rooms): a round does not copy the fleet.
	Fleet Fleet
	// Capacity is what the placeable workers offer in all.
	Capacity Capacity
	// Rooms is the master's cache of the workers' rooms (a memo: the round
	// may fill it, it decides nothing by it being full or empty).
	Rooms *Rooms
	// Buffers, if set, is storage the round reuses (Buffers).
	Buffers *Buffers
	Queues  []Queue  // every queue, in any order
	Apps    []App    // the active apps, in registration order
	Drivers []Driver // the drivers on a worker (running, or being launched)
	// WaitingDrivers are the drivers waiting for a worker, first come
	// first.
	WaitingDrivers []Driver
	// DriverCursor is where the drivers' ring starts (Plan.DriverCursor
	// is where the next round's does).
	DriverCursor int
	// Holds is the room held for queues that executors were taken back
	// for, by worker id (the last plan's Holds; holds.go).
	Holds map[string]RoomHold
}

// Index is the placement index as the scheduler uses it; *placement.Index
// implements it. Schedule changes it only between Checkpoint and
// Rollback.
type Index interface {
	Len() int
	CoresFree() int
	Round(apps []placement.App) []placement.Launch
	Put(w placement.Worker)
	Checkpoint()
	Rollback()
}

// Fleet is the read side of the master's workers. Its answers do not
// change while Schedule runs.
type Fleet interface {
	// Worker is the worker with id, if the master knows it.
	Worker(id string) (Worker, bool)
	// Workers walks every known worker in id order.
	Workers() iter.Seq[Worker]
	// ResourcesFree is what is free of each custom resource worker id
	// offers, per address in thousandths (placement.Worker.Resources);
	// nil when it offers none. A fresh map: the scheduler may change it.
	ResourcesFree(id string) map[string][]int
	// ResourcesOffered is what worker id offers, as ResourcesFree of the
	// worker empty.
	ResourcesOffered(id string) map[string][]int
	// Slots bounds Worker.Slot: every slot is below it.
	Slots() int
}

// Worker is one worker as the scheduler sees it.
type Worker struct {
	ID string
	// Slot is a small number naming the worker while the master knows it,
	// so that per-worker arrays need no map by id.
	Slot                    int
	Cores, MemoryMB         int // what it offers
	CoresFree, MemoryFreeMB int
	Labels                  map[string]string
	Ports                   *PortPool // read only: the scheduler takes ports from a copy
	Resources               bool      // it offers custom resources
	Tags                    map[string]int
	// Schedulable: ALIVE and not being removed. DiskFull and Unhealthy set
	// a schedulable worker aside: nothing new goes there.
	Schedulable, DiskFull, Unhealthy bool
}

// Placeable reports whether new work may go to w.
func (w Worker) Placeable() bool { return w.Schedulable && !w.DiskFull && !w.Unhealthy }

// Capacity is cores, memory (MB) and custom resources (thousandths of an
// address) in all.
type Capacity struct {
	Cores, MemoryMB int
	Resources       map[string]int
}

// Queue is a queue's settings and the leader's memory of it.
type Queue struct {
	Name      string
	Weight    float64
	Guarantee wire.Amount
	Limit     *wire.Amount
	Preempt   bool
	// StarvedSince: since when it has been owed capacity (zero: it is not).
	StarvedSince time.Time
	// Reclaiming counts the executors being taken back for it, not ended yet.
	Reclaiming int
	// Last is what the last round found of it (for drivers' waiting reasons).
	Last QueueOutcome
}

// Spec is what placement needs of an app's or a driver's description,
// resolved once when the master learns of it: its queue (never "": the
// master names it when it admits or loads the record), its resources in
// thousandths.
type Spec struct {
	Queue       string
	Priority    int
	Cores       int // per executor (0: left to placement), or the driver's
	MemoryMB    int // per executor, or the driver's
	Resources   map[string]int
	Asked       wire.ResourceAmounts // Resources as the description gave them, for messages
	Ports       []string             // labels
	Constraints []wire.Constraint
}

// AppSpec is an app's Spec and what only apps have.
type AppSpec struct {
	Spec
	MaxCores int // placement.Unlimited when the description sets none
	Gang     int
}

// CoresLeft is how many more cores an app of s may get while it holds
// granted (placement.Unlimited less granted when it sets no maximum). It
// is the one formula, so that the round, the waiting reasons and the
// master's status never disagree on whether an app still wants cores.
func (s *AppSpec) CoresLeft(granted int) int { return s.MaxCores - granted }

// NewAppSpec resolves an app's description (its resources were checked at
// submission).
func NewAppSpec(d wire.AppDescription) AppSpec {
	maxCores := d.MaxCores
	if maxCores <= 0 {
		maxCores = placement.Unlimited
	}
	return AppSpec{Spec: newSpec(d.ProcessSpec, d.CoresPerExecutor, d.MemoryPerExecutorMB, d.ResourcesPerExecutor), MaxCores: maxCores, Gang: d.Gang}
}

// NewDriverSpec resolves a driver's description.
func NewDriverSpec(d wire.DriverDescription) Spec {
	return newSpec(d.ProcessSpec, d.Cores, d.MemoryMB, d.Resources)
}

// newSpec is what placement reads of a description's common part and its
// size. Its queue is named already (wire.QueueName, once, by the master):
// one that names none would be in no queue, and wait for ever.
func newSpec(ps wire.ProcessSpec, cores, memory int, res wire.ResourceAmounts) Spec {
	return Spec{Queue: ps.Queue, Priority: ps.Priority, Cores: cores, MemoryMB: memory,
		Resources: milli(res), Asked: res, Ports: ps.Ports, Constraints: ps.Constraints}
}

// milli converts checked amounts (validated at submission) to thousandths.
func milli(r wire.ResourceAmounts) map[string]int {
	m, err := r.Milli()
	if err != nil {
		return nil // cannot happen: validated when submitted
	}
	return m
}

// App is an active app.
type App struct {
	ID string
	AppSpec
	// Eligible: its client answered this leader and it is not ending; an
	// app that is not gets no executors.
	Eligible bool
	// Unknown: its client has yet to answer this leader; Ending: its end
	// is being written; Finished: it ended (for waiting reasons).
	Unknown, Ending, Finished bool
	CoresGranted              int // launches being committed included
	Executors                 int // live ones, launches being committed included
	ExecutorLimit             int // placement.Unlimited when none
	// IDsLeft is the executor ids durably reserved and not used yet;
	// IDsBlocked: no reservation can be written now (one is in flight, or
	// the app is ending).
	IDsLeft    int
	IDsBlocked bool
	// The leader's memory of the app (zero times: not set).
	BackoffUntil     time.Time
	WaitingSince     time.Time // wanted executors and got none, since
	GangWaitingSince time.Time // its gang has waited to be placed whole, since
	GangRestarting   bool      // its gang is being killed to start again
	// Excluded is the workers its executors are kept off, by id.
	Excluded map[string]Exclusion
	// LeavingCores and LeavingExecs are what its executors being taken
	// back hold.
	LeavingCores, LeavingExecs int
	// History is its executors in order of age (oldest first), ended ones
	// among them: preemption reads the most recent without sorting.
	History ExecutorList
}

// Exclusion keeps an app's executors off a worker until Until.
type Exclusion struct {
	Until  time.Time
	Reason string
}

// ExecutorList is an app's executors by age. Seq(i) is At(i).Seq: the
// preemption view orders a thousand apps' most recent executors by it and
// reads only those it takes whole (building each At for the heap was
// a seventh of a preemption round at 80,000 executors).
type ExecutorList interface {
	Len() int
	At(i int) Executor
	Seq(i int) uint64
}

// Executor is one executor as preemption sees it.
type Executor struct {
	ID         int
	WorkerSlot int
	Cores      int
	MemoryMB   int
	Seq        uint64 // its rank by age: preemption takes the highest first
	// Takeable: live, RUNNING, its placement durable and not already
	// being taken back.
	Takeable bool
}

// Driver is an active driver.
type Driver struct {
	ID string
	Spec
	// Busy: it is being ended, or a write of it is in flight (a kill,
	// say): it is decided once that write is done.
	Busy bool
	// Waiting: SUBMITTED and neither launching nor ending (for waiting
	// reasons).
	Waiting bool
}
