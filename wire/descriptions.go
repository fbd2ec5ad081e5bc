package wire

// What a client submits: an app (its executors run in the cluster, its
// driver runs where the client is) or a driver (run in the cluster), and
// what the two are described by alike (ProcessSpec).

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
	// ProcessSpec: its queue and priority, its executors' ports, checks,
	// restart policy and constraints (its fields sit beside these on the
	// wire, in this place).
	ProcessSpec
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
	// ProcessSpec, as an app's; its Restart counts a supervised driver's
	// runs (unset: restarted for ever, with backoff).
	ProcessSpec
}

// ProcessSpec is what an app's executors and a driver are described by
// alike: where they run and how they are kept. Embedded in both
// descriptions, its fields sit beside theirs on the wire, in the same
// order as when each description spelled them out (an idempotency key's
// hash is of the description as marshalled).
type ProcessSpec struct {
	// Queue is the queue it runs in (DefaultQueue when empty); Priority
	// orders an app within its queue and a driver among all waiting
	// drivers, higher first.
	Queue    string `json:"queue,omitempty"`
	Priority int    `json:"priority,omitempty"`
	// StopAfterDisconnect, when set, stops its processes on a worker that
	// has been out of touch with every master that long (Nomad's
	// disconnect.stop_on_client_after), so that a process the masters
	// count as LOST is not still running when its replacement starts. Off
	// by default: a masters' outage then kills nothing (docs/HA.md).
	StopAfterDisconnect Duration `json:"stopAfterDisconnect,omitempty"`
	// Ports each process gets, by label; Checks its worker runs against
	// it; Restart counts its failures (docs/HEALTH.md).
	Ports   []string       `json:"ports,omitempty"`
	Checks  []Check        `json:"checks,omitempty"`
	Restart *RestartPolicy `json:"restart,omitempty"`
	// Constraints: it goes only to workers whose labels satisfy every one
	// (docs/PLACEMENT.md).
	Constraints []Constraint `json:"constraints,omitempty"`
}
