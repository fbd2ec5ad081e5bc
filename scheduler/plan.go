package scheduler

import (
	"time"

	"github.com/berth-cluster/berth/wire"
)

// Plan is what one round decided, for the master to apply in this order:
// driver placements, executor id reservations, launches, preemptions;
// then the memory it keeps (queues, apps' clocks, gang holds).
type Plan struct {
	Outcome Outcome
	Drivers []DriverPlacement
	// DriverCursor is where the next round's drivers' ring starts.
	DriverCursor int
	// Reservations are executor ids to reserve durably: these apps could
	// start more executors than they have ids for, and wait for the write.
	Reservations []Reservation
	Launches     []Launch
	// PortCursors is where each worker's next port search starts, for the
	// workers whose ports the round took (a gang that could not have all
	// its ports moved the search on all the same).
	PortCursors map[string]int
	Preemptions []Preemption
	// Queues is what the round found of each queue, by name.
	Queues map[string]QueueOutcome
	// Apps is the apps' clocks the round changed, by app id.
	Apps map[string]AppClocks
	// GangHolds, when GangHoldsDecided, replaces the apps held back for a
	// gang (app id → the gang's app id); else the last round's stand.
	GangHolds        map[string]string
	GangHoldsDecided bool
	// UnplacedGangs are the gangs a pass offered fewer than all their
	// executors (for the master's log).
	UnplacedGangs []UnplacedGang
	// Holds replaces the room held for owed queues (holds.go), unless
	// Outcome is Idle.
	Holds map[string]RoomHold
	// Owing: a queue or an app is owed capacity; the master runs a round
	// at every tick meanwhile, so that a preemption that comes due is
	// made on time. Meaningful unless Outcome is Idle.
	Owing bool
}

// Outcome is how far a round went.
type Outcome int

const (
	// Idle: no worker to place on; nothing was decided and the master's
	// memory stays as it was.
	Idle Outcome = iota
	// Settled: nothing waits; no queue is owed anything.
	Settled
	// Scheduled: drivers and executors were placed, and preemption looked
	// at.
	Scheduled
)

// DriverPlacement places a waiting driver.
type DriverPlacement struct {
	DriverID, WorkerID string
	// Resources are the addresses it takes (indexes into the worker's
	// offer of each resource), Ports its port of each label.
	Resources map[string][]int
	Ports     map[string]int
}

// Launch is one executor to start.
type Launch struct {
	AppID, WorkerID string
	Cores, MemoryMB int
	Resources       map[string][]int // as DriverPlacement's
	Ports           map[string]int
}

// Reservation asks for Need more executor ids of an app than it has left.
type Reservation struct {
	AppID string
	Need  int
}

// Preemption takes an executor back: Why is written in its record before
// its kill is sent ("for queue etl"); For is the queue it is taken for.
type Preemption struct {
	AppID      string
	ExecutorID int
	Why, For   string
}

// QueueOutcome is a queue as a round left it.
type QueueOutcome struct {
	Usage, Fair, Waiting wire.Amount
	DominantShare        float64
	FairDominantShare    float64
	// Held says why its apps got nothing more ("" when nothing held
	// them): its limit, or its fair share while others are owed theirs.
	Held string
	// Reclaiming says what is being taken back for it.
	Reclaiming   string
	StarvedSince time.Time
}

// AppClocks is the leader's memory of an app that rounds keep.
type AppClocks struct {
	WaitingSince     time.Time
	GangWaitingSince time.Time
	GangRestarting   bool
}

// UnplacedGang is a gang a pass could not place whole.
type UnplacedGang struct {
	AppID           string
	Gang, Placeable int
}
