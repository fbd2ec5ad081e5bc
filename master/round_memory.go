package master

import "github.com/berth-cluster/berth/scheduler"

// roundMemory is what a scheduling round leaves for the next: the parts
// of the last plan the next view carries (scheduler.View), the executors
// being taken back, and storage the rounds reuse. keepRound (schedule.go)
// writes the plan's parts, markReclaimed and unmarkReclaimed (preempt.go)
// the count taken back; schedulingView (schedview.go) reads them.
type roundMemory struct {
	// driverCursor is where the next round's driver placement starts
	// (Plan.DriverCursor).
	driverCursor int
	// owing: after the last round, a queue or an app was owed capacity
	// (scheduler.Plan.Owing, decided in scheduler/preempt.go): each tick
	// runs a round, so a preemption that comes due is made without
	// waiting for another event.
	owing bool
	// heldForGang: the apps the last round held back for a gang that has
	// waited long enough (by id), and that gang's app id.
	heldForGang map[string]string
	// roomHolds: the workers whose room is held for a queue executors were
	// taken back there for (scheduler/holds.go), by id.
	roomHolds map[string]scheduler.RoomHold
	// reclaiming counts, by owed queue, the executors being taken back for
	// it: a queue waits for them to end before more are taken.
	reclaiming map[string]int
	// buffers and apps are storage the rounds reuse.
	buffers scheduler.Buffers
	apps    []scheduler.App
}
