package wire

import (
	"fmt"
	"math"
	"regexp"
	"time"
)

// Queues, tenants and the audit log: the shared cluster (docs/QUEUES.md).

// DefaultQueue is the queue of an app or a driver that names none; it
// always exists (weight 1, no guarantee, no limit, preemptible).
const DefaultQueue = "default"

// QueueName is the queue a description names: DefaultQueue for "".
func QueueName(name string) string {
	if name == "" {
		return DefaultQueue
	}
	return name
}

// Amount is an amount of the cluster's capacity: cores, memory and custom
// resources (a whole number of addresses, or a share of one).
type Amount struct {
	Cores     int             `json:"cores,omitempty"`
	MemoryMB  int             `json:"memoryMB,omitempty"`
	Resources ResourceAmounts `json:"resources,omitempty"`
}

// QueueSpec is the body of PUT /v1/queues/{name}: it creates the queue or
// replaces its settings.
type QueueSpec struct {
	// Weight is the queue's weight in the fair share: a queue of weight 2
	// gets twice the dominant share of one of weight 1. Absent: 1.
	Weight *float64 `json:"weight,omitempty"`
	// Guarantee is served first, as far as the queue has demand for it,
	// and reclaimed by preemption when others hold it. Absent: none.
	Guarantee *Amount `json:"guarantee,omitempty"`
	// Limit bounds what the queue holds; a field left out (or 0) bounds
	// nothing. Absent: no limit.
	Limit *Amount `json:"limit,omitempty"`
	// Preempt lets the master reclaim what the queue holds above its fair
	// share for queues below theirs. Absent: true.
	Preempt *bool `json:"preempt,omitempty"`
}

// QueueStatus is one queue in GET /v1/queues.
type QueueStatus struct {
	Name      string  `json:"name"`
	Weight    float64 `json:"weight"`
	Guarantee Amount  `json:"guarantee"`
	Limit     *Amount `json:"limit,omitempty"`
	Preempt   bool    `json:"preempt"`
	// InUse is what its apps' executors and its drivers hold now.
	InUse Amount `json:"inUse"`
	// DominantShare is InUse's largest fraction of the cluster's capacity
	// over cores, memory and each resource (DRF).
	DominantShare float64 `json:"dominantShare"`
	// FairShare is what the queue is entitled to now, given every queue's
	// weight, guarantee, limit and demand; FairDominantShare its dominant
	// share.
	FairShare         Amount  `json:"fairShare"`
	FairDominantShare float64 `json:"fairDominantShare"`
	// Waiting is the demand its apps and drivers have not been given.
	Waiting Amount `json:"waiting"`
	Apps    int    `json:"apps"`    // active apps
	Drivers int    `json:"drivers"` // active drivers
	// Preemptions counts the executors taken from this queue for others
	// by this leader.
	Preemptions int `json:"preemptions"`
	// Reclaiming says what is being reclaimed for this queue, if anything.
	Reclaiming string `json:"reclaiming,omitempty"`
}

// Queues is GET /v1/queues.
type Queues struct {
	// Capacity is what the queues share: the ALIVE workers' totals.
	Capacity Amount        `json:"capacity"`
	Queues   []QueueStatus `json:"queues"`
}

// TenantSpec is the body of POST /v1/tenants/{name}: the queues the tenant
// may submit into and, optionally, the Unix user its processes run as on
// workers with --run-as dynamic.
type TenantSpec struct {
	Queues   []string `json:"queues"`
	UnixUser string   `json:"unixUser,omitempty"`
	// DefaultQueue is the queue of a submission of the tenant's that names
	// none: one of Queues. Absent: its only queue if it has one, else
	// DefaultQueue ("default").
	DefaultQueue string `json:"defaultQueue,omitempty"`
}

// TenantCreated answers a tenant's creation with its token, given once:
// the masters keep only its hash.
type TenantCreated struct {
	Name  string `json:"name"`
	Token string `json:"token"`
}

// TenantStatus is one tenant in GET /v1/tenants.
type TenantStatus struct {
	Name      string    `json:"name"`
	Queues    []string  `json:"queues"`
	UnixUser  string    `json:"unixUser,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
	// DefaultQueue as it was made with.
	DefaultQueue string `json:"defaultQueue,omitempty"`
}

// Tenants is GET /v1/tenants.
type Tenants struct {
	Tenants []TenantStatus `json:"tenants"`
}

// TenantTokenPrefix starts every tenant's token: bt.<name>.<secret part>.
const TenantTokenPrefix = "bt."

// AuditEntry is one state-changing request, as GET /v1/audit lists them.
type AuditEntry struct {
	Time time.Time `json:"time"`
	// Principal is who asked: "cli:NAME" (a cli certificate), "secret",
	// "ui-session" (the web UI), "tenant:NAME", "driver:ID", "worker:ID",
	// "master:ID", "loopback" (no credentials configured), or "anonymous"
	// (an open route).
	Principal string `json:"principal"`
	// Tenant is the tenant the principal acts for, if any.
	Tenant string `json:"tenant,omitempty"`
	Route  string `json:"route"`  // "DELETE /v1/apps/{id}"
	Target string `json:"target"` // the app, driver, worker, queue or tenant
	// Outcome is "ok", or the error code of a refusal.
	Outcome string `json:"outcome"`
	Status  int    `json:"status"`
	// Suppressed: this many refusals of the principal before this entry
	// were not recorded, over its ration of the log (a caller refused in
	// a loop); an entry with Outcome AuditNotRecorded says only that.
	Suppressed int `json:"suppressed,omitempty"`
}

// AuditNotRecorded is the outcome of an entry that only counts a
// principal's refusals the log did not record (AuditEntry.Suppressed).
const AuditNotRecorded = "not_recorded"

// Audit is GET /v1/audit (?since=1h&tenant=NAME).
type Audit struct {
	Entries []AuditEntry `json:"entries"`
}

// Query parameters of GET /v1/audit.
const (
	AuditSinceParam  = "since"
	AuditTenantParam = "tenant"
)

var queueName = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]{0,62}$`)

// CheckQueueName refuses a name that is not a queue's (lowercase letters,
// digits, '-', '_' and '.', at most 63).
func CheckQueueName(what, name string) error {
	if !queueName.MatchString(name) {
		return fmt.Errorf("%s %q: want lowercase letters, digits, '-', '_' or '.', starting with a letter or digit, at most 63", what, clip(name))
	}
	return nil
}

// MaxPriority bounds an app's or a driver's priority either way.
const MaxPriority = 1_000_000

// CheckPriority refuses a priority beyond ±MaxPriority.
func CheckPriority(p int) error {
	if p < -MaxPriority || p > MaxPriority {
		return fmt.Errorf("priority %d: want %d to %d", p, -MaxPriority, MaxPriority)
	}
	return nil
}

// Check refuses an amount with a negative field, or a resource that is
// misnamed or not a finite amount of at least 0.001.
func (a Amount) Check(what string) error {
	if a.Cores < 0 || a.MemoryMB < 0 {
		return fmt.Errorf("%s: cores and memory must be 0 or more", what)
	}
	if len(a.Resources) > MaxResources {
		return fmt.Errorf("%s: %d resources, at most %d", what, len(a.Resources), MaxResources)
	}
	for name, v := range a.Resources {
		if !ValidResourceName(name) {
			return fmt.Errorf("%s: resource name %q: want a lowercase letter then lowercase letters, digits or _ (at most 32)", what, clip(name))
		}
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0.001 || v > 1e9 {
			return fmt.Errorf("%s: resource %s: amount %v, want at least 0.001", what, name, v)
		}
	}
	return nil
}

// CheckWeight refuses a weight that is not a positive finite number.
func CheckWeight(w float64) error {
	if math.IsNaN(w) || math.IsInf(w, 0) || w <= 0 || w > 1e6 {
		return fmt.Errorf("weight %v: want more than 0 (and at most 1000000)", w)
	}
	return nil
}
