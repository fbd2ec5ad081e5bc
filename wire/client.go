package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"time"
)

// Messages between clients (the CLI, drivers, app clients) and the master.
// The routes are declared in routes.go (MasterAPI) and listed, with the
// error codes (errors.go), in docs/API.md. The log endpoints answer plain
// text and take ?tail=N to return only the last N bytes.
//
// POST /v1/apps and POST /v1/drivers create something, so repeating one
// blindly could start an app or a driver twice. A client makes them safe to
// repeat with an IdempotencyKeyHeader: a repeat with the same key answers the
// id of the first (Submitted.Existing set) instead of creating another, on
// any leader, for as long as the master lists that app or driver (active, or
// among the completed ones it retains). A repeat while the first is still
// being committed waits for its outcome; the same key with a different
// description is refused with 422.

// IdempotencyKeyHeader carries a client's key for a submission (as in the
// IETF draft "The Idempotency-Key HTTP Header Field"): 1 to 128 characters
// among letters, digits and "-_.:+/=", optionally in double quotes.
const IdempotencyKeyHeader = "Idempotency-Key"

// Submitted answers a registration or submission with the new id.
type Submitted struct {
	ID string `json:"id"`
	// Existing: the request repeated an earlier one with the same
	// idempotency key, and ID is that one's.
	Existing bool `json:"existing,omitempty"`
}

// ExecutorLimit sets the executors an app may hold in total.
type ExecutorLimit struct {
	Limit int `json:"limit"`
}

// UnmarshalJSON requires the limit: a body without it ({} or null) must
// not read as a limit of 0, which stops every new executor.
func (l *ExecutorLimit) UnmarshalJSON(data []byte) error {
	var raw struct {
		Limit *int `json:"limit"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields() // as the API decodes every body
	if err := dec.Decode(&raw); err != nil {
		return err
	}
	if raw.Limit == nil {
		return errors.New("limit: required, a number of executors (0 or more)")
	}
	l.Limit = *raw.Limit
	return nil
}

// KillExecutors names executors of an app to kill.
type KillExecutors struct {
	ExecutorIDs []int `json:"executorIds"`
}

// ExecutorStatus is one executor of an app.
type ExecutorStatus struct {
	ID       int    `json:"id"`
	WorkerID string `json:"workerId"`
	// Host is its worker's host, as the worker advertises it.
	Host     string        `json:"host,omitempty"`
	Cores    int           `json:"cores"`
	MemoryMB int           `json:"memoryMB"`
	State    ExecutorState `json:"state"`
	ExitCode *int          `json:"exitCode,omitempty"`
	Message  string        `json:"message,omitempty"`
	// Resources: the addresses of custom resources it was given.
	Resources ResourceGrants `json:"resources,omitempty"`
	// Ports: its ports by label; Health: what its checks say ("" without).
	Ports  map[string]int `json:"ports,omitempty"`
	Health Health         `json:"health,omitempty"`
	// Cause, once FAILED: "worker" when its worker could not prepare or
	// start it (no fault of the app: Spark's exitCausedByApp is false),
	// absent when the process failed on its own. A LOST executor (its
	// worker lost, drained past its deadline) and a KILLED one (its app's
	// request, a preemption, its app's end) are never the app's failure.
	Cause FailureCause `json:"cause,omitempty"`
	// DrainDeadline: its worker is being drained (berth worker drain);
	// it should end on its own before then (a Spark executor
	// decommissions), else it is killed and replaced elsewhere.
	DrainDeadline *time.Time `json:"drainDeadline,omitempty"`
}

// AppStatus is an application as the master sees it.
type AppStatus struct {
	ID                  string     `json:"id"`
	Name                string     `json:"name"`
	State               AppState   `json:"state"`
	SubmittedAt         time.Time  `json:"submittedAt"`
	EndedAt             *time.Time `json:"endedAt,omitempty"`
	MaxCores            int        `json:"maxCores"` // 0: unlimited
	CoresGranted        int        `json:"coresGranted"`
	CoresPerExecutor    int        `json:"coresPerExecutor,omitempty"`
	MemoryPerExecutorMB int        `json:"memoryPerExecutorMB"`
	// ResourcesPerExecutor: custom resources each executor asks for.
	ResourcesPerExecutor ResourceAmounts `json:"resourcesPerExecutor,omitempty"`
	ExecutorLimit        *int            `json:"executorLimit,omitempty"` // absent: no bound
	RetryCount           int             `json:"retryCount"`
	Message              string          `json:"message,omitempty"`
	// Waiting says why an active app has no executor, or no more while it
	// wants more cores ("waiting: ..." or, when no worker could ever hold
	// one, "cannot start: ...").
	Waiting   string           `json:"waiting,omitempty"`
	Executors []ExecutorStatus `json:"executors"`
	Queue     string           `json:"queue"`
	Priority  int              `json:"priority"`
	// Tenant is the tenant that submitted it (or whose driver did).
	Tenant string `json:"tenant,omitempty"`
	// Ports, Checks and Restart as it asked; Excluded: the workers its
	// executors are kept off for now.
	Ports    []string       `json:"ports,omitempty"`
	Checks   []Check        `json:"checks,omitempty"`
	Restart  *RestartPolicy `json:"restart,omitempty"`
	Excluded []Exclusion    `json:"excluded,omitempty"`
	// Constraints as it asked.
	Constraints []Constraint `json:"constraints,omitempty"`
	// Gang and GangRestart as it asked.
	Gang        int  `json:"gang,omitempty"`
	GangRestart bool `json:"gangRestart,omitempty"`
	// Detached as it asked: no client holds it.
	Detached bool `json:"detached,omitempty"`
	// UIURL as it gave it: its own web UI.
	UIURL string `json:"uiUrl,omitempty"`
	// Command is its executors' argv, as it registered it (placeholders
	// unsubstituted).
	Command []string `json:"command,omitempty"`
}

// MaxUIURLBytes bounds AppDescription.UIURL.
const MaxUIURLBytes = 2048

// DriverStatus is a driver as the master sees it.
type DriverStatus struct {
	ID          string      `json:"id"`
	Name        string      `json:"name,omitempty"`
	State       DriverState `json:"state"`
	SubmittedAt time.Time   `json:"submittedAt"`
	// EndedAt is when it ended (a final state), as its final record says.
	EndedAt      *time.Time `json:"endedAt,omitempty"`
	Cores        int        `json:"cores"`
	MemoryMB     int        `json:"memoryMB"`
	Supervise    bool       `json:"supervise"`
	Command      []string   `json:"command"`
	WorkerID     string     `json:"workerId,omitempty"`
	ExitCode     *int       `json:"exitCode,omitempty"`
	Message      string     `json:"message,omitempty"`
	RelaunchOf   string     `json:"relaunchOf,omitempty"`   // the driver this one replaces
	RelaunchedAs string     `json:"relaunchedAs,omitempty"` // the driver that replaced this one
	// KillRequested: a kill was accepted (and is durable) while the driver
	// ran; its worker reports KILLED once the process is gone.
	KillRequested bool `json:"killRequested,omitempty"`
	// Waiting says why a SUBMITTED driver has not started (as AppStatus's).
	Waiting string `json:"waiting,omitempty"`
	// ResourcesAsked: custom resources it asks for; Resources: the
	// addresses its current launch was given.
	ResourcesAsked ResourceAmounts `json:"resourcesAsked,omitempty"`
	Resources      ResourceGrants  `json:"resources,omitempty"`
	Queue          string          `json:"queue"`
	Priority       int             `json:"priority"`
	Tenant         string          `json:"tenant,omitempty"`
	// Ports and Health of its current run, as an executor's.
	Ports  map[string]int `json:"ports,omitempty"`
	Health Health         `json:"health,omitempty"`
	// Constraints as it asked.
	Constraints []Constraint `json:"constraints,omitempty"`
}

// WorkerStatus is a worker as the master sees it.
type WorkerStatus struct {
	ID            string      `json:"id"`
	Host          string      `json:"host"`
	Port          int         `json:"port"`
	Address       string      `json:"address"`
	Cores         int         `json:"cores"`
	CoresUsed     int         `json:"coresUsed"`
	MemoryMB      int         `json:"memoryMB"`
	MemoryUsedMB  int         `json:"memoryUsedMB"`
	State         WorkerState `json:"state"`
	LastHeartbeat time.Time   `json:"lastHeartbeat"`
	// DrainDeadline: being drained (DECOMMISSIONING) until then.
	DrainDeadline *time.Time `json:"drainDeadline,omitempty"`
	// Limits: how the worker enforces its processes' limits ("cgroup v1",
	// "cgroup v2", "not enforced: ..."), as it registered.
	Limits string `json:"limits,omitempty"`
	// Resources: the custom resources it offers, with their use, by name.
	Resources []ResourceUse `json:"resources,omitempty"`
	// DiskFull: its work directory is short of space (its words): nothing
	// new is placed on it meanwhile.
	DiskFull string `json:"diskFull,omitempty"`
	// Unhealthy: processes of several apps failed here lately, so nothing
	// new is placed here until that passes or an operator clears it
	// (berth worker clear); why, and since when.
	Unhealthy      string     `json:"unhealthy,omitempty"`
	UnhealthySince *time.Time `json:"unhealthySince,omitempty"`
	// Labels: what it was started with (--label), for constraints.
	Labels map[string]string `json:"labels,omitempty"`
}

// Exclusion is a worker an app's executors are kept off: they failed
// there twice within the exclusion window.
type Exclusion struct {
	WorkerID string    `json:"workerId"`
	Until    time.Time `json:"until"`
	Reason   string    `json:"reason"`
}

// DrainRequest is the body of POST /v1/workers/{id}/drain.
type DrainRequest struct {
	// DeadlineSeconds is how long what runs on the worker may take to end
	// on its own before it is killed and replaced elsewhere; 0: the
	// default (10 minutes).
	DeadlineSeconds int `json:"deadlineSeconds"`
}

// MasterNode is one master of the cluster, as Raft sees it.
type MasterNode struct {
	ID       string `json:"id"`
	RaftAddr string `json:"raftAddr"`
	APIAddr  string `json:"apiAddr,omitempty"`
	Leader   bool   `json:"leader"`
	Voter    bool   `json:"voter"`
	// Version is the master's build (internal/version), as it last said
	// when asked; "" until it has answered (or a master too old to say).
	// Masters of one cluster on different versions: an upgrade under way.
	Version string `json:"version,omitempty"`
	// Raft: the master's own figures, when asked for (the UI's overview).
	Raft *RaftFigures `json:"raft,omitempty"`
	// Reachable: whether the master that answered reached this one when
	// it last asked (every master asks the others every second); absent
	// until it has asked. UnreachableSince: since when it has not
	// answered (the first ask it failed); LastSeen: when it last answered
	// (absent: not since the answering master started); Unreachable:
	// what the last failed ask got. A master that does not answer keeps
	// its place in the Raft configuration (Voter) but says nothing of
	// its role: Leader is false.
	Reachable        *bool      `json:"reachable,omitempty"`
	UnreachableSince *time.Time `json:"unreachableSince,omitempty"`
	LastSeen         *time.Time `json:"lastSeen,omitempty"`
	Unreachable      string     `json:"unreachable,omitempty"`
}

// RaftFigures is one master's Raft state as it sees it (GET /v1/raft/status).
type RaftFigures struct {
	ID           string `json:"id"`
	State        string `json:"state"` // Leader, Follower, Candidate, Shutdown
	Term         uint64 `json:"term"`
	CommitIndex  uint64 `json:"commitIndex"`
	AppliedIndex uint64 `json:"appliedIndex"`
	LastContact  string `json:"lastContact"`       // since it last heard the leader: "0" on the leader, "never"
	Version      string `json:"version,omitempty"` // the master's build
}

// Query parameters of GET /v1/cluster: completed=false leaves the finished
// apps and drivers out, workers=false the workers' list (their summary
// stays).
const (
	ClusterCompletedParam = "completed"
	ClusterWorkersParam   = "workers"
)

// Views of ClusterStatus.
const (
	ViewLeader   = "leader"
	ViewFollower = "follower"
)

// EventType names an AppEvent.
type EventType string

const (
	// EventSnapshot: the app and all its executors. First on every stream,
	// and again when a new leader completes recovery, so a client can drop
	// executors it no longer sees.
	EventSnapshot        EventType = "snapshot"
	EventExecutorAdded   EventType = "executorAdded"
	EventExecutorUpdated EventType = "executorUpdated"
	EventExecutorLost    EventType = "executorLost" // its worker was lost
	EventAppRemoved      EventType = "appRemoved"   // final; the stream ends
	EventMasterChanged   EventType = "masterChanged"
	// EventRelaunchDelayed: the app's executors keep ending soon after
	// they start, so its next ones wait (Message says how long).
	EventRelaunchDelayed EventType = "relaunchDelayed"
	// EventExecutorLimitChanged: the app's executor limit changed (its
	// write committed; Message says from what to what).
	EventExecutorLimitChanged EventType = "executorLimitChanged"
	// EventExecutorPreempted: one of the app's executors is being taken
	// back for another queue, or an app of higher priority (Message says
	// which); it ends KILLED.
	EventExecutorPreempted EventType = "executorPreempted"
	// EventExecutorDraining: an executor's worker is being drained; its
	// DrainDeadline says until when it may run (Spark's plugin
	// decommissions it). Sent when the drain starts, to the app's client.
	EventExecutorDraining EventType = "executorDraining"
	// EventExecutorHealthy: an executor's check passed for the first time
	// (or again after failures); EventExecutorUnhealthy: its checks failed
	// their count and its worker killed it (it ends FAILED).
	EventExecutorHealthy   EventType = "executorHealthy"
	EventExecutorUnhealthy EventType = "executorUnhealthy"
	// EventHeartbeat: the master still leads and the stream is alive. An
	// idle stream carries one every few hundred milliseconds, and only
	// while the master has confirmed its leadership with a quorum, so a
	// client notices within a second that its master froze, was cut off
	// or was deposed (see AppEvent.NextWithinMs).
	EventHeartbeat EventType = "heartbeat"
)

// AppEvent is one line of GET /v1/apps/{id}/events.
type AppEvent struct {
	Type  EventType `json:"type"`
	AppID string    `json:"appId"`
	// Time is when the master made the event (its clock).
	Time     time.Time       `json:"time"`
	Executor *ExecutorStatus `json:"executor,omitempty"`
	App      *AppStatus      `json:"app,omitempty"`     // snapshot, appRemoved
	Epoch    uint64          `json:"epoch,omitempty"`   // masterChanged
	Leader   string          `json:"leader,omitempty"`  // masterChanged
	Message  string          `json:"message,omitempty"` // appRemoved, executorLost, relaunchDelayed, executorLimitChanged
	// NextWithinMs promises the next line of the stream within this many
	// milliseconds (snapshot, heartbeat). A client that hears nothing for
	// that long treats the stream as dead and reconnects, to whichever
	// master leads by then.
	NextWithinMs int64 `json:"nextWithinMs,omitempty"`
}

// Error is the body of every error response.
type Error struct {
	Error  string `json:"error"`
	Leader string `json:"leader,omitempty"` // set on a redirect to the leader
	// Code says what went wrong for programs to act on (ErrorCode); the
	// message is for people and may change.
	Code ErrorCode `json:"code,omitempty"`
}

// JoinRequest adds a master to the Raft cluster (POST /v1/raft/join).
type JoinRequest struct {
	ID       string `json:"id"`
	RaftAddr string `json:"raftAddr"`
	APIAddr  string `json:"apiAddr"`
}

// EndSession ends a web UI session of the masters (POST
// /v1/ui/sessions/end): its cookie's value, which proves the right to end
// it. A master the browser signed out at, not leading, sends it here to
// the leader.
type EndSession struct {
	Session string `json:"session"`
}

// LeaveRequest removes a master from the Raft cluster (POST /v1/raft/leave).
type LeaveRequest struct {
	ID string `json:"id"`
}
