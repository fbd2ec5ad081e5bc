// Package persistence keeps the master's durable state: applications,
// drivers, workers, the masters of the cluster, where each live executor
// was placed, and the epoch (Spark's PersistenceEngine). Everything else the
// master knows (heartbeats, executor states, who answered during recovery)
// comes from workers' and clients' reports and is never written.
//
// Changes are Commands with a type tag. State.Apply is the one deterministic
// function that applies them, shared by every engine: a local bbolt file for
// a single master, and the Raft log for several (whose FSM calls Apply on
// every master in the same order).
package persistence

import (
	"strconv"
	"time"

	"github.com/berth-cluster/berth/wire"
)

// Records are values: a record in a State is never modified in place. The
// master builds a new record and writes it with a Put command.

// AppRecord is a registered application.
type AppRecord struct {
	ID          string              `json:"id"`
	Desc        wire.AppDescription `json:"desc"`
	SubmittedAt time.Time           `json:"submittedAt"`
	// ExecutorLimit is the current limit set through dynamic allocation;
	// nil means no bound.
	ExecutorLimit *int `json:"executorLimit,omitempty"`
	// ExecutorIDsReserved: executor ids below it may have been handed out by
	// some leader. A new leader starts numbering there, so an executor id is
	// never reused for an app, even for executors no worker reported.
	ExecutorIDsReserved int `json:"executorIdsReserved"`
	// State is WAITING while the app is active (the live state is the
	// master's), or its final state once it ended.
	State   wire.AppState `json:"state"`
	EndedAt *time.Time    `json:"endedAt,omitempty"`
	Message string        `json:"message,omitempty"`
	// Summary of a finished app, kept for status pages: its cores, and its
	// last executors as they ended (at most finishedExecutorsKept), so that
	// a new leader lists them as the old one did.
	CoresGranted int                   `json:"coresGranted,omitempty"`
	Executors    []wire.ExecutorStatus `json:"executors,omitempty"`
	// Owner is the driver that registered the app with its credential, ""
	// for an operator: that driver may manage it, no other.
	Owner string `json:"owner,omitempty"`
	// Tenant is the tenant that submitted the app (itself, or through a
	// driver it submitted), "" for an operator's.
	Tenant string `json:"tenant,omitempty"`
	// UnixUser is its tenant's Unix user when it was submitted: its
	// processes keep it for their whole life, whatever becomes of the
	// tenant.
	UnixUser string `json:"unixUser,omitempty"`
	// IdempotencyKey is the key the client registered it with, if any:
	// a repeat with the same key gets this app's id (wire.IdempotencyKeyHeader).
	// IdempotencyHash identifies the description as the client sent it, so
	// a key reused for something else is told apart.
	IdempotencyKey  string `json:"idempotencyKey,omitempty"`
	IdempotencyHash string `json:"idempotencyHash,omitempty"`
}

// DriverRecord is a submitted driver.
type DriverRecord struct {
	ID          string                 `json:"id"`
	Desc        wire.DriverDescription `json:"desc"`
	SubmittedAt time.Time              `json:"submittedAt"`
	State       wire.DriverState       `json:"state"` // SUBMITTED while it waits, RUNNING once its launch is written (WorkerID), else final
	WorkerID    string                 `json:"workerId,omitempty"`
	// WorkerIncarnation is the worker process the driver was launched on.
	// A new leader whose worker answers from that same process without
	// listing the driver knows the launch never reached it (the old leader
	// died between its launch record and the command), so the driver waits
	// again rather than being lost.
	WorkerIncarnation string     `json:"workerIncarnation,omitempty"`
	ExitCode          *int       `json:"exitCode,omitempty"`
	Message           string     `json:"message,omitempty"`
	RelaunchOf        string     `json:"relaunchOf,omitempty"`
	RelaunchedAs      string     `json:"relaunchedAs,omitempty"`
	EndedAt           *time.Time `json:"endedAt,omitempty"`
	// KillRequested: someone asked to kill the driver while it ran. The
	// request is durable before it is acknowledged, so a new leader still
	// kills the driver (and does not relaunch it) if the old one could not.
	KillRequested bool `json:"killRequested,omitempty"`
	// CredentialHash is the SHA-256 (hex) of the credential minted for the
	// driver's current launch (wire.EnvToken); any leader checks a driver's
	// requests against it. The credential itself is never written.
	CredentialHash string `json:"credentialHash,omitempty"`
	// Resources: the addresses of custom resources its current launch was
	// given (on WorkerID); Ports, the ports of its labels there.
	Resources wire.ResourceGrants `json:"resources,omitempty"`
	Ports     map[string]int      `json:"ports,omitempty"`
	// Tenant is the tenant that submitted it, "" for an operator's: its
	// credential then acts for that tenant.
	Tenant string `json:"tenant,omitempty"`
	// UnixUser is its tenant's Unix user when it was submitted: its
	// processes keep it for their whole life, whatever becomes of the
	// tenant.
	UnixUser string `json:"unixUser,omitempty"`
	// IdempotencyKey is the key it was submitted with, if any, and
	// IdempotencyHash its description's as the client sent it. A relaunch
	// carries both: a repeat gets the newest driver of the chain.
	IdempotencyKey  string `json:"idempotencyKey,omitempty"`
	IdempotencyHash string `json:"idempotencyHash,omitempty"`
}

// WorkerRecord is a registered worker.
type WorkerRecord struct {
	ID       string `json:"id"`
	Host     string `json:"host"`
	Port     int    `json:"port"`
	Address  string `json:"address"`
	Cores    int    `json:"cores"`
	MemoryMB int    `json:"memoryMB"`
	// Resources: the custom resources it offers, name → addresses.
	Resources map[string][]string `json:"resources,omitempty"`
	// DrainDeadline: the worker is being drained until then (a new leader
	// goes on with the drain).
	DrainDeadline *time.Time `json:"drainDeadline,omitempty"`
	// PortRange: the ports it hands out (absent: wire.DefaultPortRange).
	PortRange *wire.PortRange `json:"portRange,omitempty"`
	// Labels: as it registered (--label), for constraints.
	Labels map[string]string `json:"labels,omitempty"`
}

// ExecutorRecord is a live executor: where it was placed. It is written at
// launch and deleted when the executor ends, so that a new leader knows what
// each worker had even if the worker never answers it (its executors are
// then LOST and their apps told). Its state changes are not written: the
// worker reports them to whichever master leads.
type ExecutorRecord struct {
	AppID    string `json:"appId"`
	ID       int    `json:"id"`
	WorkerID string `json:"workerId"`
	Cores    int    `json:"cores"`
	MemoryMB int    `json:"memoryMB"`
	// Resources: the addresses of custom resources it was given, so that a
	// new leader keeps them taken while it runs.
	Resources wire.ResourceGrants `json:"resources,omitempty"`
	// PreemptedFor, once set, says why the executor is being taken back
	// ("for queue etl", "for an app of priority 5 in queue etl"): a new
	// leader kills it too, and it ends KILLED saying so.
	PreemptedFor string `json:"preemptedFor,omitempty"`
	// StartedAt is when its placement was written: preemption takes the
	// most recent first.
	StartedAt time.Time `json:"startedAt,omitzero"`
	// Ports: the ports of its labels on its worker, given with the
	// placement (a new leader keeps them taken).
	Ports map[string]int `json:"ports,omitempty"`
	// ReclaimedFor, with PreemptedFor, is the queue it is taken back for:
	// a new leader counts it as on its way there, and takes no more for
	// that queue until it has ended.
	ReclaimedFor string `json:"reclaimedFor,omitempty"`
}

// Key is the record's id in the state: appId/executorId.
func (r *ExecutorRecord) Key() string { return ExecutorKey(r.AppID, r.ID) }

// ExecutorKey names an executor record.
func ExecutorKey(appID string, id int) string { return appID + "/" + strconv.Itoa(id) }

// MasterRecord maps a master's Raft id to its API address, so that every
// master can tell clients where the leader's API is.
type MasterRecord struct {
	ID      string `json:"id"`
	APIAddr string `json:"apiAddr"`
}

// Finished reports whether the record is of an app that ended.
func (r *AppRecord) Finished() bool { return r.State.Finished() }

// Finished reports whether the record is of a driver that ended.
func (r *DriverRecord) Finished() bool { return r.State.Finished() }

// ending is a record that ends once, an app or a driver: what the index of
// ended records, and the rules their Put and Delete share, read of it.
type ending interface {
	key() string
	Finished() bool
	endTime() *time.Time
}

// endingRecord is the pointer to a record type R that is ending, for the
// code that keeps maps of *R (as recordKinds do) and asks the records of
// their end.
type endingRecord[R any] interface {
	*R
	ending
}

func (r *AppRecord) endTime() *time.Time    { return r.EndedAt }
func (r *DriverRecord) endTime() *time.Time { return r.EndedAt }

func endedAt(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return *t
}

// EndedSession is a web UI session signed out at At, which would have
// expired at Expires (both Unix seconds); Holder is the tenant whose
// session it was, "" for an operator's (sessions_ended.go).
type EndedSession struct {
	ID      string `json:"id"`
	Expires int64  `json:"expires"`
	At      int64  `json:"at"`
	Holder  string `json:"holder,omitempty"`
}

// QueueRecord is a queue's settings (wire.QueueSpec with its defaults
// applied). The default queue has none unless an operator set it.
type QueueRecord struct {
	Name      string       `json:"name"`
	Weight    float64      `json:"weight"`
	Guarantee wire.Amount  `json:"guarantee"`
	Limit     *wire.Amount `json:"limit,omitempty"`
	Preempt   bool         `json:"preempt"`
}

// TenantRecord is a tenant: the queues it may use and the SHA-256 (hex) of
// its token; the token itself is never written.
type TenantRecord struct {
	Name      string    `json:"name"`
	Queues    []string  `json:"queues"`
	TokenHash string    `json:"tokenHash"`
	UnixUser  string    `json:"unixUser,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
	// DefaultQueue: wire.TenantSpec's.
	DefaultQueue string `json:"defaultQueue,omitempty"`
}

// AuditRecord is one audit entry, and how long entries are kept: applying
// it drops those older than its time minus Retain (the same on every
// master), and the oldest beyond MaxAuditEntries.
type AuditRecord struct {
	Entry  wire.AuditEntry `json:"entry"`
	Retain time.Duration   `json:"retain"`
}

// MaxAuditEntries and MaxAuditBytes bound the audit log whatever its
// retention: entries of at most wire.MaxAuditText a field fill the bytes
// first (32 MiB is about 150,000 entries of typical size, 50,000 of the
// largest).
const (
	MaxAuditEntries = 100_000
	MaxAuditBytes   = 32 << 20
)
