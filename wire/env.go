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
	// EnvSecret is the operator secret, for daemons and the CLI (prefer
	// EnvSecretFile: a process's environment is readable by its user). No
	// process a worker starts inherits it.
	EnvSecret = "BERTH_SECRET"
	// EnvSecretFile names a file holding the operator secret.
	EnvSecretFile = "BERTH_SECRET_FILE"
	// EnvToken is a driver's credential, minted by the master for that
	// driver alone and valid while it runs: it may register apps and manage
	// the apps it registered, nothing else. Executors get none.
	EnvToken = "BERTH_TOKEN"
	// EnvTLSCAFile, EnvTLSCertFile, EnvTLSKeyFile name the cluster's CA
	// certificate and a certificate and key of it. A worker gives its
	// processes the CA file only (to verify the masters).
	EnvTLSCAFile   = "BERTH_TLS_CA_FILE"
	EnvTLSCertFile = "BERTH_TLS_CERT_FILE"
	EnvTLSKeyFile  = "BERTH_TLS_KEY_FILE"
)

// DriverTokenPrefix starts every driver credential: drv1.<driver id>.<random>.
const DriverTokenPrefix = "drv1."

// Placeholders substituted in an executor's or driver's argv and in its
// env's values. PlaceholderHome is the absolute path of its home/, its
// working directory (a Spark executor's local directories go there).
const (
	PlaceholderAppID      = "{{APP_ID}}"
	PlaceholderExecutorID = "{{EXECUTOR_ID}}"
	PlaceholderCores      = "{{CORES}}"
	PlaceholderHostname   = "{{HOSTNAME}}"
	PlaceholderHome       = "{{HOME}}"
)

// Limits every daemon applies to requests.
const (
	MaxBodyBytes   = 1 << 20 // a request body larger than this gets 413
	MaxCommandArgs = 4096
	MaxCores       = 1 << 16 // per worker, per app request, per driver
	MaxMemoryMB    = 1 << 30 // 1 PiB
)
