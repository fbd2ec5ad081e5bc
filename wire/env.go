package wire

// Environment a worker gives the processes it starts, on top of the app's or
// driver's own env.
const (
	EnvAppID      = "BERTH_APP_ID"
	EnvExecutorID = "BERTH_EXECUTOR_ID"
	EnvDriverID   = "BERTH_DRIVER_ID"
	EnvCores      = "BERTH_CORES"
	EnvMemoryMB   = "BERTH_MEMORY_MB"
	EnvWorkerID   = "BERTH_WORKER_ID"
	EnvWorkerHost = "BERTH_HOST" // the host the worker advertises; bind servers here
	// EnvMaster is the comma-separated list of master API addresses.
	EnvMaster = "BERTH_MASTER"
	// EnvSecret is the cluster's shared secret. Daemons and the CLI read it
	// too; a worker passes it to drivers (not to executors), which register
	// their app with the master.
	EnvSecret = "BERTH_SECRET"
)

// Placeholders substituted in an executor's or driver's argv.
const (
	PlaceholderAppID      = "{{APP_ID}}"
	PlaceholderExecutorID = "{{EXECUTOR_ID}}"
	PlaceholderCores      = "{{CORES}}"
	PlaceholderHostname   = "{{HOSTNAME}}"
)

// Limits every daemon applies to requests.
const (
	MaxBodyBytes   = 1 << 20 // a request body larger than this gets 413
	MaxCommandArgs = 4096
	MaxCores       = 1 << 16 // per worker, per app request, per driver
	MaxMemoryMB    = 1 << 30 // 1 PiB
)
