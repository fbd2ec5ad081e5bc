package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strings"
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

// AppDescription is what a client registers.
type AppDescription struct {
	Name    string            `json:"name"`
	Command []string          `json:"command"` // argv of each executor
	Env     map[string]string `json:"env,omitempty"`
	// MaxCores caps the cores the app holds; 0 takes the master's
	// --default-cores (unlimited unless set).
	MaxCores int `json:"maxCores,omitempty"`
	// CoresPerExecutor fixes the executor size; 0 leaves it to placement
	// (one executor per worker holding all the cores it gets there).
	CoresPerExecutor int `json:"coresPerExecutor,omitempty"`
	// MemoryPerExecutorMB defaults to 1024.
	MemoryPerExecutorMB int `json:"memoryPerExecutorMB,omitempty"`
	// InitialExecutorLimit bounds the executors the app starts with
	// (dynamic allocation); absent means no bound.
	InitialExecutorLimit *int `json:"initialExecutorLimit,omitempty"`
	// ResourcesPerExecutor: custom resources each executor needs, e.g.
	// {"gpu": 1}, or {"gpu": 0.5} for half of one shared GPU.
	ResourcesPerExecutor ResourceAmounts `json:"resourcesPerExecutor,omitempty"`
	// Queue is the queue the app runs in (DefaultQueue when empty);
	// Priority orders it within its queue, higher first.
	Queue    string `json:"queue,omitempty"`
	Priority int    `json:"priority,omitempty"`
	// StopAfterDisconnect, when set, stops the app's executors on a worker
	// that has been out of touch with every master that long (Nomad's
	// disconnect.stop_on_client_after), so that an executor the masters
	// count as LOST is not still running when its replacement starts. Off
	// by default: a masters' outage then kills nothing (docs/HA.md).
	StopAfterDisconnect Duration `json:"stopAfterDisconnect,omitempty"`
	// Ports each executor gets, by label; Checks its worker runs against
	// it; Restart counts its failures (docs/HEALTH.md).
	Ports   []string       `json:"ports,omitempty"`
	Checks  []Check        `json:"checks,omitempty"`
	Restart *RestartPolicy `json:"restart,omitempty"`
	// Constraints: its executors go only to workers whose labels satisfy
	// every one (docs/PLACEMENT.md).
	Constraints []Constraint `json:"constraints,omitempty"`
	// Gang: its first Gang executors start together or not at all
	// (distributed training, MPI); a member lost later is replaced alone,
	// unless GangRestart, which kills and replaces the whole gang.
	Gang        int  `json:"gang,omitempty"`
	GangRestart bool `json:"gangRestart,omitempty"`
	// UIURL is the app's own web UI (a Spark driver's), which berth's
	// status and web UI link to: an http or https URL, at most
	// MaxUIURLBytes.
	UIURL string `json:"uiUrl,omitempty"`
	// Detached: no client holds the app (berth run --detach). The master
	// keeps it without one, for as long as it is not killed (berth kill
	// app) or unregistered, instead of finishing it after --app-timeout;
	// a new leader schedules it at once instead of waiting for a client.
	Detached bool `json:"detached,omitempty"`
}

// DriverDescription is what `berth submit` sends: a driver run in the cluster.
type DriverDescription struct {
	// Name is for people: status and the UI list the driver by it
	// (default: the base name of its program), at most 256 bytes.
	Name      string            `json:"name,omitempty"`
	Command   []string          `json:"command"`
	Env       map[string]string `json:"env,omitempty"`
	Cores     int               `json:"cores"`
	MemoryMB  int               `json:"memoryMB"`
	Supervise bool              `json:"supervise"`
	// Resources: custom resources the driver needs, e.g. {"gpu": 1}.
	Resources ResourceAmounts `json:"resources,omitempty"`
	// Queue and Priority, as an app's.
	Queue    string `json:"queue,omitempty"`
	Priority int    `json:"priority,omitempty"`
	// StopAfterDisconnect, as an app's: the driver is stopped on a worker
	// out of touch with every master that long.
	StopAfterDisconnect Duration `json:"stopAfterDisconnect,omitempty"`
	// Ports, Checks and Restart, as an app's executors'; Restart counts a
	// supervised driver's runs (unset: restarted for ever, with backoff).
	Ports   []string       `json:"ports,omitempty"`
	Checks  []Check        `json:"checks,omitempty"`
	Restart *RestartPolicy `json:"restart,omitempty"`
	// Constraints, as an app's: where the driver may run.
	Constraints []Constraint `json:"constraints,omitempty"`
}

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

// ClusterStatus is GET /v1/cluster.
type ClusterStatus struct {
	MasterID string       `json:"masterId"`
	Status   MasterStatus `json:"status"`
	// Version is the build of the master that answered (each master's is
	// in Masters).
	Version string `json:"version,omitempty"`
	// View is "leader" when this master leads, "follower" when the answer is
	// a follower's replica (durable state only: no executors, no heartbeats).
	View     string `json:"view"`
	Leader   string `json:"leader,omitempty"` // API address of the leader, if known
	LeaderID string `json:"leaderId,omitempty"`
	Epoch    uint64 `json:"epoch"`
	// LeaderSince is when this master's leadership began (leader view only).
	LeaderSince *time.Time `json:"leaderSince,omitempty"`
	// LeaderContact is when this master last heard from a leader
	// (follower view only; absent if it never has since it started): its
	// replica holds what was committed until about then.
	LeaderContact *time.Time `json:"leaderContact,omitempty"`

	// WorkerSummary counts the workers by state, with their cores and
	// memory; always set. Workers lists them, unless ?workers=false asked
	// for the summary alone (a cluster of 100,000 workers).
	WorkerSummary    WorkerSummary  `json:"workerSummary"`
	Workers          []WorkerStatus `json:"workers"`
	ActiveApps       []AppStatus    `json:"activeApps"`
	CompletedApps    []AppStatus    `json:"completedApps"`
	ActiveDrivers    []DriverStatus `json:"activeDrivers"`
	CompletedDrivers []DriverStatus `json:"completedDrivers"`
	Masters          []MasterNode   `json:"masters,omitempty"`
}

// WorkerSummary is ClusterStatus's count of the workers.
type WorkerSummary struct {
	Total           int `json:"total"`
	Alive           int `json:"alive"`
	Decommissioning int `json:"decommissioning"`
	Dead            int `json:"dead"`
	Other           int `json:"other"` // UNKNOWN (recovery), DECOMMISSIONED
	Cores           int `json:"cores"`
	CoresUsed       int `json:"coresUsed"`
	MemoryMB        int `json:"memoryMB"`
	MemoryUsedMB    int `json:"memoryUsedMB"`
	// Resources: the custom resources the workers offer, by name.
	Resources []ResourceTotal `json:"resources,omitempty"`
}

// ResourceTotal is one custom resource over the workers: the addresses
// they offer (as Cores counts every worker's cores), and those wholly free
// on ALIVE workers, which a new executor or driver can have.
type ResourceTotal struct {
	Name      string `json:"name"`
	Addresses int    `json:"addresses"`
	Free      int    `json:"free"`
}

// Add counts one worker.
func (s *WorkerSummary) Add(w WorkerStatus) {
	s.Total++
	switch w.State {
	case WorkerAlive:
		s.Alive++
	case WorkerDecommissioning:
		s.Decommissioning++
	case WorkerDead:
		s.Dead++
	default:
		s.Other++
	}
	s.Cores += w.Cores
	s.CoresUsed += w.CoresUsed
	s.MemoryMB += w.MemoryMB
	s.MemoryUsedMB += w.MemoryUsedMB
	s.Resources = AddResourceUses(s.Resources, w.State, w.Resources)
}

// AddResourceUses counts one worker's resources (in state) into ts: every
// address it offers, and the wholly free ones when it is ALIVE.
func AddResourceUses(ts []ResourceTotal, state WorkerState, rs []ResourceUse) []ResourceTotal {
	for _, r := range rs {
		free := 0
		if state == WorkerAlive {
			free = r.Free
		}
		ts = AddResourceTotal(ts, r.Name, len(r.Addresses), free)
	}
	return ts
}

// AddResourceTotal counts addresses and free ones of resource name in ts,
// the names kept in order, and returns ts.
func AddResourceTotal(ts []ResourceTotal, name string, addresses, free int) []ResourceTotal {
	i, found := slices.BinarySearchFunc(ts, name, func(t ResourceTotal, name string) int { return strings.Compare(t.Name, name) })
	if !found {
		ts = slices.Insert(ts, i, ResourceTotal{Name: name})
	}
	ts[i].Addresses += addresses
	ts[i].Free += free
	return ts
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
