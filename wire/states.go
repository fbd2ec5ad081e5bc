// Package wire holds every type that crosses the network between the master,
// the workers and clients, under the /v1 API. JSON field names are camelCase.
//
// One package, shared by all three, so that a field renamed on one side is a
// compile error on the other.
package wire

// MasterStatus is a master's recovery state (Spark's RecoveryState).
type MasterStatus string

const (
	// MasterStandby: not the leader; answers reads from its replica.
	MasterStandby MasterStatus = "STANDBY"
	// MasterRecovering: newly elected, waiting for workers and apps to answer.
	MasterRecovering MasterStatus = "RECOVERING"
	// MasterCompletingRecovery: removing what did not answer.
	MasterCompletingRecovery MasterStatus = "COMPLETING_RECOVERY"
	// MasterAlive: the leader, scheduling.
	MasterAlive MasterStatus = "ALIVE"
)

// WorkerState is the master's view of a worker.
type WorkerState string

const (
	WorkerAlive   WorkerState = "ALIVE"
	WorkerDead    WorkerState = "DEAD"
	WorkerUnknown WorkerState = "UNKNOWN" // recovered from storage, not yet heard from
	// WorkerDecommissioned: shutting down; nothing new is placed on it, and
	// it is removed when it says it left (or stops heartbeating).
	WorkerDecommissioned WorkerState = "DECOMMISSIONED"
	// WorkerDecommissioning: being drained (berth worker drain): nothing
	// new is placed on it; what runs there has until its drain deadline to
	// end, then is killed and replaced elsewhere.
	WorkerDecommissioning WorkerState = "DECOMMISSIONING"
)

// AppState is an application's state.
type AppState string

const (
	AppWaiting  AppState = "WAITING"
	AppRunning  AppState = "RUNNING"
	AppFinished AppState = "FINISHED"
	AppFailed   AppState = "FAILED"
	AppKilled   AppState = "KILLED"
	AppUnknown  AppState = "UNKNOWN" // recovered from storage, client not yet heard from
)

// Finished reports whether s is final.
func (s AppState) Finished() bool {
	return s == AppFinished || s == AppFailed || s == AppKilled
}

// ExecutorState is an executor's state.
type ExecutorState string

const (
	ExecutorLaunching ExecutorState = "LAUNCHING"
	ExecutorRunning   ExecutorState = "RUNNING"
	ExecutorKilled    ExecutorState = "KILLED" // killed on request
	ExecutorFailed    ExecutorState = "FAILED" // exited non-zero
	ExecutorLost      ExecutorState = "LOST"   // its worker was lost
	ExecutorExited    ExecutorState = "EXITED" // exited 0
)

// Finished reports whether s is final.
func (s ExecutorState) Finished() bool {
	switch s {
	case ExecutorKilled, ExecutorFailed, ExecutorLost, ExecutorExited:
		return true
	}
	return false
}

// Valid reports whether s is one of the known states.
func (s ExecutorState) Valid() bool {
	return s == ExecutorLaunching || s == ExecutorRunning || s.Finished()
}

// DriverState is a driver's state.
type DriverState string

const (
	DriverSubmitted   DriverState = "SUBMITTED"   // waiting for a worker
	DriverRunning     DriverState = "RUNNING"     // launched on a worker
	DriverRelaunching DriverState = "RELAUNCHING" // its worker was lost; relaunched under a new id
	DriverUnknown     DriverState = "UNKNOWN"     // recovered from storage, no worker has claimed it yet
	DriverFinished    DriverState = "FINISHED"    // exited 0
	DriverFailed      DriverState = "FAILED"      // exited non-zero and not supervised
	DriverKilled      DriverState = "KILLED"      // killed on request
	DriverError       DriverState = "ERROR"       // could not run: launch failed, or its worker was lost
)

// Finished reports whether s is final.
func (s DriverState) Finished() bool {
	switch s {
	case DriverFinished, DriverFailed, DriverKilled, DriverError, DriverRelaunching:
		return true
	}
	return false
}

// Valid reports whether s is one of the known states.
func (s DriverState) Valid() bool {
	return s == DriverSubmitted || s == DriverRunning || s == DriverUnknown || s.Finished()
}
