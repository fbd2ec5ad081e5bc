package wire

// Messages between a worker and the master; the routes are declared in
// routes.go (MasterAPI for the worker's calls, WorkerAPI for the master's
// commands). A 404 with code unknown_worker means the master does not know
// the worker (it must register again); other 404s name an unknown app,
// executor or driver (unknown_app, unknown_executor, unknown_driver). Every
// command from a master carries its epoch; a worker refuses (409,
// stale_epoch) one older than the newest epoch it has seen.

import "time"

// RegisterWorker announces a worker to the master.
type RegisterWorker struct {
	ID       string `json:"id"`
	Host     string `json:"host"`
	Port     int    `json:"port"`
	Cores    int    `json:"cores"`
	MemoryMB int    `json:"memoryMB"`
	// Address is the base URL of the worker's API as the master should call
	// it: exactly http(s)://Host:Port.
	Address string `json:"address"`
	// Limits says how the worker enforces its processes' memory, CPU and
	// pids: "cgroup v1", "cgroup v2", or "not enforced: <why>".
	Limits string `json:"limits,omitempty"`
	// Resources: the custom resources the worker offers, name → addresses
	// (--resource).
	Resources map[string][]string `json:"resources,omitempty"`
	// Incarnation is random per worker process. A known worker id that
	// registers with a new incarnation was restarted: what the master had
	// placed on the old process is gone.
	Incarnation string `json:"incarnation,omitempty"`
	// PortRange: the ports it hands out (--port-range); absent:
	// DefaultPortRange.
	PortRange *PortRange `json:"portRange,omitempty"`
	// Labels: what it says of itself for constraints (--label).
	Labels map[string]string `json:"labels,omitempty"`
}

// RegisteredWorker accepts a registration.
type RegisteredWorker struct {
	MasterID string `json:"masterId"`
	Epoch    uint64 `json:"epoch"`
	// Duplicate: the master already knew this worker id (a retry, or a
	// worker coming back during recovery).
	Duplicate bool `json:"duplicate"`
	// HeartbeatIntervalMs is how often the master wants heartbeats.
	HeartbeatIntervalMs int64 `json:"heartbeatIntervalMs"`
}

// Heartbeat is sent by a registered worker every HeartbeatIntervalMs.
type Heartbeat struct {
	CoresUsed    int `json:"coresUsed"`
	MemoryUsedMB int `json:"memoryUsedMB"`
	// DiskFull, set while the worker's work directory is short of space,
	// says so ("work dir /var/lib/berth: 12 MiB free, below
	// --min-free-disk 64 MiB"): nothing new is placed on the worker until
	// a heartbeat comes without it. At most MaxDiskFullLen bytes.
	DiskFull string `json:"diskFull,omitempty"`
	// BusyPorts: ports of its --port-range that a process of the host
	// holds which the worker did not give them to (a tenant's process
	// that bound them itself, another program): the master gives them no
	// process until a heartbeat no longer lists them. At most
	// MaxBusyPorts, sorted.
	BusyPorts []int `json:"busyPorts,omitempty"`
}

// MaxDiskFullLen bounds Heartbeat.DiskFull; MaxBusyPorts
// Heartbeat.BusyPorts.
const (
	MaxDiskFullLen = 512
	MaxBusyPorts   = 4096
)

// HeartbeatReply answers a heartbeat.
type HeartbeatReply struct {
	Epoch uint64 `json:"epoch"`
	// Reconnect: the master does not know this worker (it expired it, or it
	// restarted); the worker must register again.
	Reconnect bool `json:"reconnect"`
	// HeartbeatIntervalMs, when set, is the interval the master now wants
	// (it grows with the number of workers).
	HeartbeatIntervalMs int64 `json:"heartbeatIntervalMs,omitempty"`
}

// FailureCause says who a FAILED process (an ERROR driver) is owed to:
// only the worker's own failures count against its health, for every
// tenant; the process's count against its app (docs/HEALTH.md).
type FailureCause string

const (
	// CauseProcess: its exit code, its checks, its memory, its command
	// (not found, not executable).
	CauseProcess FailureCause = ""
	// CauseWorker: the worker could not prepare or start it (its
	// directories, logs, files or cgroup; the start itself).
	CauseWorker FailureCause = "worker"
	// CauseSignal: a signal no part of berth sent ended it (SIGKILL,
	// SIGTERM, SIGINT or SIGHUP from a person or the host, the host's
	// OOM killer): not the app's failure, nor the worker's. A crash
	// (SIGSEGV, SIGABRT, ...) and its own memory limit are the app's.
	CauseSignal FailureCause = "signal"
)

// ExecutorStateChanged reports an executor's new state.
type ExecutorStateChanged struct {
	AppID      string        `json:"appId"`
	ExecutorID int           `json:"executorId"`
	State      ExecutorState `json:"state"`
	Message    string        `json:"message,omitempty"`
	ExitCode   *int          `json:"exitCode,omitempty"`
	// Health: a checked executor's, with a RUNNING report when it changes;
	// HealthUnhealthy with the FAILED report of one its checks killed.
	Health Health `json:"health,omitempty"`
	// Cause, with a FAILED report: who the failure is owed to.
	Cause FailureCause `json:"cause,omitempty"`
}

// DriverStateChanged reports a driver's new state.
type DriverStateChanged struct {
	DriverID string      `json:"driverId"`
	State    DriverState `json:"state"`
	Message  string      `json:"message,omitempty"`
	ExitCode *int        `json:"exitCode,omitempty"`
	// OutOfTouch: the worker stopped the driver itself, out of touch with
	// the masters past its stopAfterDisconnect; the master ends it as if
	// its worker were lost (a supervised driver is relaunched elsewhere).
	// An executor so stopped is reported LOST.
	OutOfTouch bool `json:"outOfTouch,omitempty"`
	// Health and Cause, as an executor's.
	Health Health       `json:"health,omitempty"`
	Cause  FailureCause `json:"cause,omitempty"`
}

// ExecutorReport is one executor a worker runs, or one that ended and whose
// final state no master has acknowledged yet (then State is final and
// ExitCode and Message say how it ended).
type ExecutorReport struct {
	AppID      string         `json:"appId"`
	ExecutorID int            `json:"executorId"`
	Cores      int            `json:"cores"`
	MemoryMB   int            `json:"memoryMB"`
	State      ExecutorState  `json:"state"`
	ExitCode   *int           `json:"exitCode,omitempty"`
	Message    string         `json:"message,omitempty"`
	Resources  ResourceGrants `json:"resources,omitempty"`
	// Ports and Health, as it runs (a new leader learns them here).
	Ports  map[string]int `json:"ports,omitempty"`
	Health Health         `json:"health,omitempty"`
	// Cause, in a FAILED final state: as ExecutorStateChanged's.
	Cause FailureCause `json:"cause,omitempty"`
}

// DriverReport is one driver a worker runs, or one that ended unacknowledged
// (as ExecutorReport).
type DriverReport struct {
	DriverID  string         `json:"driverId"`
	Cores     int            `json:"cores"`
	MemoryMB  int            `json:"memoryMB"`
	State     DriverState    `json:"state"`
	ExitCode  *int           `json:"exitCode,omitempty"`
	Message   string         `json:"message,omitempty"`
	Resources ResourceGrants `json:"resources,omitempty"`
	// OutOfTouch, in a final state: as DriverStateChanged's.
	OutOfTouch bool `json:"outOfTouch,omitempty"`
	// Ports, Health and Cause, as an executor's.
	Ports  map[string]int `json:"ports,omitempty"`
	Health Health         `json:"health,omitempty"`
	Cause  FailureCause   `json:"cause,omitempty"`
}

// WorkerLatestState is everything a worker runs, plus what ended without a
// master acknowledging it (so that a new leader learns of those ends in the
// same breath as of what still runs). A worker sends it after every
// registration; the master adopts what it knows (during recovery), applies
// the ends, and has the worker kill what it does not know (SPARK-13604).
type WorkerLatestState struct {
	WorkerID  string           `json:"workerId"`
	Executors []ExecutorReport `json:"executors"`
	Drivers   []DriverReport   `json:"drivers"`
	// Epoch and Master are filled in on GET /v1/state only: the newest epoch
	// the worker has seen and the master it is registered with.
	Epoch  uint64 `json:"epoch,omitempty"`
	Master string `json:"master,omitempty"`
}

// LatestStateReply tells the worker what the master did with its report.
type LatestStateReply struct {
	KilledExecutors []ExecutorRef `json:"killedExecutors,omitempty"`
	KilledDrivers   []string      `json:"killedDrivers,omitempty"`
}

// ExecutorRef names one executor.
type ExecutorRef struct {
	AppID      string `json:"appId"`
	ExecutorID int    `json:"executorId"`
}

// Process is what a worker runs for a launch: the command, its environment
// and what it is given (cores, memory, custom resources).
type Process struct {
	Command  []string          `json:"command"`
	Env      map[string]string `json:"env,omitempty"`
	Cores    int               `json:"cores"`
	MemoryMB int               `json:"memoryMB"`
	// Resources: the addresses of custom resources the process is given.
	Resources ResourceGrants `json:"resources,omitempty"`
	// User is the Unix user a worker with --run-as dynamic runs it as (its
	// tenant's unixUser) instead of an identity of its own; "" for none.
	User string `json:"user,omitempty"`
	// StopAfterDisconnect: the worker stops the process once it has been
	// out of touch with every master this long; 0: never.
	StopAfterDisconnect Duration `json:"stopAfterDisconnect,omitempty"`
	// Ports: the ports of its labels, from the worker's range; Checks: the
	// worker runs them once it has started.
	Ports  map[string]int `json:"ports,omitempty"`
	Checks []Check        `json:"checks,omitempty"`
}

// LaunchExecutor asks a worker to start an executor. Its Process fields are
// promoted: on the wire they sit beside the others.
type LaunchExecutor struct {
	Epoch      uint64 `json:"epoch"`
	MasterURL  string `json:"masterUrl"`
	AppID      string `json:"appId"`
	ExecutorID int    `json:"executorId"`
	Process
}

// MaxKillGrace bounds a kill's grace (KillExecutor.GraceMs, a master's
// --preemption-grace, a worker's --kill-grace): a process that needs more
// to stop is not going to stop.
const MaxKillGrace = 10 * time.Minute

// KillExecutor asks a worker to kill an executor.
type KillExecutor struct {
	Epoch      uint64 `json:"epoch"`
	AppID      string `json:"appId"`
	ExecutorID int    `json:"executorId"`
	// GraceMs, when set (at most MaxKillGrace), replaces the worker's
	// --kill-grace for this kill
	// (a preemption's --preemption-grace).
	GraceMs int64 `json:"graceMs,omitempty"`
}

// LaunchDriver asks a worker to start a driver. Its Process fields are
// promoted: on the wire they sit beside the others.
type LaunchDriver struct {
	Epoch     uint64 `json:"epoch"`
	MasterURL string `json:"masterUrl"`
	DriverID  string `json:"driverId"`
	Process
	Supervise bool `json:"supervise"`
	// Token is the driver's credential (EnvToken), for this launch only.
	Token string `json:"token,omitempty"`
	// Restart counts a supervised driver's runs on its worker (nil: it is
	// restarted for ever, with a backoff).
	Restart *RestartPolicy `json:"restart,omitempty"`
}

// KillDriver asks a worker to kill a driver.
type KillDriver struct {
	Epoch    uint64 `json:"epoch"`
	DriverID string `json:"driverId"`
}

// ApplicationFinished tells a worker an app is over: kill its executors and
// clean up after it.
type ApplicationFinished struct {
	Epoch uint64 `json:"epoch"`
	AppID string `json:"appId"`
}

// Reconnect tells a worker to register with the master at Master: the master
// changed (a new leader), or the master forgot the worker.
type Reconnect struct {
	Epoch  uint64 `json:"epoch"`
	Master string `json:"master"`
}

// StaleEpoch is the body of a worker's 409 refusal of a stale command.
type StaleEpoch struct {
	Error string    `json:"error"`
	Code  ErrorCode `json:"code"`  // CodeStaleEpoch
	Epoch uint64    `json:"epoch"` // the newest epoch the worker has seen
}

// Command is a master's command to a worker: each carries the master's
// epoch, which the worker checks before anything else.
type Command interface{ CommandEpoch() uint64 }

func (c LaunchExecutor) CommandEpoch() uint64      { return c.Epoch }
func (c KillExecutor) CommandEpoch() uint64        { return c.Epoch }
func (c LaunchDriver) CommandEpoch() uint64        { return c.Epoch }
func (c KillDriver) CommandEpoch() uint64          { return c.Epoch }
func (c ApplicationFinished) CommandEpoch() uint64 { return c.Epoch }
func (c Reconnect) CommandEpoch() uint64           { return c.Epoch }
