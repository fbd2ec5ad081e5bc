// Package master is berth's master: it registers workers, applications and
// drivers, keeps them durable through a persistence engine, leads (or
// follows) through an election agent, expires workers that stop
// heartbeating, and schedules drivers and executors.
//
// All state is owned by one goroutine, the loop (Spark's Master actor):
// HTTP handlers and timers send it events and wait for replies. The
// transitions are plain methods on core, which never does I/O itself: it
// asks its effects for writes, commands to workers and leadership
// bookkeeping, so tests drive it with a fake clock and fake effects.
package master

import (
	"cmp"
	"errors"
	"fmt"
	"github.com/berth-cluster/berth/admission"
	"time"

	"github.com/berth-cluster/berth/internal/httpx"
	"github.com/berth-cluster/berth/placement"
	"github.com/berth-cluster/berth/security"
	"github.com/berth-cluster/berth/wire"
)

// Config is everything a master is told at start.
type Config struct {
	ID        string // this master's id (its Raft node id with several masters)
	Advertise string // API base URL workers and clients use to reach this master
	Secret    string
	// TLS, when set, is the master's certificate and the cluster's CA: its
	// API is TLS and it talks to workers only over TLS, to the worker
	// certificate of each worker's id.
	TLS *security.TLS

	WorkerTimeout   time.Duration // a worker silent this long is DEAD
	AppTimeout      time.Duration // an app whose client is gone this long is finished
	RecoveryTimeout time.Duration // how long a new leader waits for workers and apps

	DefaultCores       int    // maxCores of an app that asks for 0; 0 means unlimited
	Placement          string // placement policy name
	WorkerOrder        string // placement worker order
	MinCoreUnit        int    // cores per placement step; 0: one (placement.CoreUnit)
	MaxExecutorRetries int    // consecutive executor failures that fail an app; 0: the default (10); < 0: never
	RetainedApps       int    // finished apps kept for status
	RetainedDrivers    int    // finished drivers kept for status
	MaxDrivers         int    // drivers running at once (--max-drivers); 0: no bound
	// MaxHeartbeatsPerSecond is the heartbeat rate the master aims at
	// (--max-heartbeats-per-second): the interval it asks of workers grows
	// with their number (heartbeatInterval). 0: the default.
	MaxHeartbeatsPerSecond int

	// Caps (limits.go); 0 takes the default.
	MaxActiveApps      int // apps registered and not ended
	MaxActiveDrivers   int // drivers submitted and not ended
	MaxSubmissionBytes int // bytes of a submission's command and environment
	MaxStreamsPerApp   int // event streams open on one app
	// MaxTenantWritesPerSecond rations each tenant's changes
	// (audit_budget.go).
	MaxTenantWritesPerSecond int

	CommandTimeout time.Duration // per master → worker request

	// The shared cluster (queues.go, preempt.go, audit.go); 0: the default.
	// PreemptionDelay is how long a queue owed capacity waits before it is
	// taken from others (--preemption-delay); PreemptionGrace the time
	// between a preempted executor's SIGTERM and its SIGKILL
	// (--preemption-grace); AuditRetention how long the audit log keeps an
	// entry (--audit-retention).
	PreemptionDelay time.Duration
	PreemptionGrace time.Duration
	AuditRetention  time.Duration
	// ExcludeDuration: how long an app's executors are kept off a worker
	// where two of them failed within ten minutes (--exclude-duration,
	// exclusions.go); 0: the default.
	ExcludeDuration time.Duration
	// GangReserveAfter: how long a gang waits to be placed whole before
	// capacity is held for it as it frees (--gang-reserve-after, gang.go);
	// 0: the default.
	GangReserveAfter time.Duration

	// policy is built by withDefaults from Placement, WorkerOrder and
	// MinCoreUnit (placementPolicy).
	policy placement.Policy
}

// Defaults of Config, Spark's where Spark has one.
const (
	DefaultWorkerTimeout          = 60 * time.Second
	DefaultMaxHeartbeatsPerSecond = 500
	DefaultMaxExecutorRetries     = 10
	DefaultRetained               = 200
	DefaultCommandTimeout         = 5 * time.Second
	// DefaultPreemptionDelay: long enough that capacity freed by executors
	// ending on their own (short tasks, the end of a stage) is used before
	// anything is killed, short enough that a queue owed its guarantee
	// gets it within a minute (YARN's fair-share preemption timeouts are
	// of that order).
	DefaultPreemptionDelay = 30 * time.Second
	// DefaultPreemptionGrace: time to finish a task or checkpoint after
	// SIGTERM (Kubernetes' default terminationGracePeriodSeconds is 30).
	DefaultPreemptionGrace = 30 * time.Second
	DefaultAuditRetention  = 30 * 24 * time.Hour
	// DefaultExcludeDuration: Spark's spark.excludeOnFailure.timeout (1h)
	// is for long jobs on large clusters; ten minutes, the window the
	// failures are counted in, lets a worker whose trouble was passing
	// (a full disk, a bad mount) back sooner.
	DefaultExcludeDuration = 10 * time.Minute
	// DefaultGangReserveAfter: a gang waits this long before the apps
	// behind it are held back for it.
	DefaultGangReserveAfter = 2 * time.Minute
	// reaperIterations: DEAD workers stay listed this many worker timeouts
	// (Spark's spark.dead.worker.persistence).
	reaperIterations = 15
	// defaultMemoryPerExecutorMB: Spark's spark.executor.memory default.
	defaultMemoryPerExecutorMB = 1024
	defaultDriverMemoryMB      = 1024
)

// WithDefaults is what New does first with c: it fills unset durations and
// limits, checks the rest and builds the placement policy. It is where the
// master's flags are checked (cmd/master only parses them), so its errors
// name them; cmd/master calls it before it opens any state, so that a bad
// flag writes nothing. New takes its result as it is: the policy built
// here is the one that places, so the result goes to one New only (a
// policy may learn from what it places).
func (c Config) WithDefaults() (Config, error) { return c.withDefaults() }

// withDefaults is WithDefaults under the name New calls. It may run twice
// on a Config (cmd/master's, then New's): it fills only what is unset and
// builds the policy once.
func (c Config) withDefaults() (Config, error) {
	if c.ID == "" {
		return c, errors.New("--node-id is empty")
	}
	// Checked, not rewritten: membership compares the API address it
	// announced, cmd/master's, with the replicated one this master writes.
	if _, err := wire.ParseMasterURL("--advertise", c.Advertise); err != nil {
		return c, err
	}
	if c.WorkerTimeout == 0 {
		c.WorkerTimeout = DefaultWorkerTimeout
	}
	if c.AppTimeout == 0 {
		c.AppTimeout = c.WorkerTimeout
	}
	if c.RecoveryTimeout == 0 {
		c.RecoveryTimeout = c.WorkerTimeout // SPARK-46348
	}
	if c.CommandTimeout == 0 {
		c.CommandTimeout = DefaultCommandTimeout
	}
	c.PreemptionDelay = cmp.Or(c.PreemptionDelay, DefaultPreemptionDelay)
	c.PreemptionGrace = cmp.Or(c.PreemptionGrace, DefaultPreemptionGrace)
	c.AuditRetention = cmp.Or(c.AuditRetention, DefaultAuditRetention)
	c.ExcludeDuration = cmp.Or(c.ExcludeDuration, DefaultExcludeDuration)
	c.GangReserveAfter = cmp.Or(c.GangReserveAfter, DefaultGangReserveAfter)
	if c.MaxExecutorRetries == 0 {
		c.MaxExecutorRetries = DefaultMaxExecutorRetries
	}
	if c.RetainedApps == 0 {
		c.RetainedApps = DefaultRetained
	}
	if c.RetainedDrivers == 0 {
		c.RetainedDrivers = DefaultRetained
	}
	c.MaxActiveApps = cmp.Or(c.MaxActiveApps, DefaultMaxActiveApps)
	c.MaxHeartbeatsPerSecond = cmp.Or(c.MaxHeartbeatsPerSecond, DefaultMaxHeartbeatsPerSecond)
	c.MaxActiveDrivers = cmp.Or(c.MaxActiveDrivers, DefaultMaxActiveDrivers)
	c.MaxSubmissionBytes = cmp.Or(c.MaxSubmissionBytes, DefaultMaxSubmissionBytes)
	c.MaxStreamsPerApp = cmp.Or(c.MaxStreamsPerApp, DefaultMaxStreamsPerApp)
	c.MaxTenantWritesPerSecond = cmp.Or(c.MaxTenantWritesPerSecond, DefaultMaxTenantWritesPerSecond)
	if c.Placement == "" {
		c.Placement = "spread"
	}
	for _, d := range []struct {
		flag string
		v    time.Duration
	}{{"--worker-timeout", c.WorkerTimeout}, {"--app-timeout", c.AppTimeout}, {"--recovery-timeout", c.RecoveryTimeout}, {"command timeout", c.CommandTimeout},
		{"--preemption-delay", c.PreemptionDelay}, {"--preemption-grace", c.PreemptionGrace}, {"--audit-retention", c.AuditRetention},
		{"--exclude-duration", c.ExcludeDuration}, {"--gang-reserve-after", c.GangReserveAfter}} {
		if d.v < 0 {
			return c, fmt.Errorf("%s %s is negative", d.flag, d.v)
		}
	}
	if c.PreemptionGrace > wire.MaxKillGrace {
		return c, fmt.Errorf("--preemption-grace %s: at most %s (a worker refuses a kill with a longer grace)", c.PreemptionGrace, wire.MaxKillGrace)
	}
	for _, n := range []struct {
		flag string
		v    int
	}{{"--retained-apps", c.RetainedApps}, {"--retained-drivers", c.RetainedDrivers}, {"--max-drivers", c.MaxDrivers},
		{"--max-active-apps", c.MaxActiveApps}, {"--max-active-drivers", c.MaxActiveDrivers}, {"--max-submission-bytes", c.MaxSubmissionBytes},
		{"--max-streams-per-app", c.MaxStreamsPerApp}, {"--max-heartbeats-per-second", c.MaxHeartbeatsPerSecond},
		{"--max-tenant-writes-per-second", c.MaxTenantWritesPerSecond}} {
		if n.v < 0 {
			return c, fmt.Errorf("%s %d is negative", n.flag, n.v)
		}
	}
	if c.DefaultCores < 0 || c.DefaultCores > admission.MaxAppCores {
		return c, fmt.Errorf("--default-cores %d: want 0 (unlimited) to %d", c.DefaultCores, admission.MaxAppCores)
	}
	if c.policy == nil {
		p, err := placement.New(c.Placement, placement.Options{Order: c.WorkerOrder, MinCoreUnit: c.MinCoreUnit})
		if err != nil {
			return c, fmt.Errorf("%s: %w", placementFlag(err), err)
		}
		c.policy = p
	}
	// The one step every policy takes (placement.CoreUnit), for what the
	// master says of an app that waits.
	c.MinCoreUnit = placement.CoreUnit(c.MinCoreUnit)
	return c, nil
}

// placementFlag names the flag behind an error of placement.New.
func placementFlag(err error) string {
	switch {
	case errors.Is(err, placement.ErrUnknownOrder):
		return "--worker-order"
	case errors.Is(err, placement.ErrNegativeUnit):
		return "--min-core-unit"
	}
	return "--placement"
}

// placementPolicy is the policy withDefaults built from Placement,
// WorkerOrder and MinCoreUnit: built once, so that what was checked is
// what places.
func (c Config) placementPolicy() (placement.Policy, error) {
	if c.policy == nil {
		return nil, errors.New("master: the configuration did not go through withDefaults: no placement policy")
	}
	return c.policy, nil
}

// heartbeatInterval is what the master asks of workers when it has workers
// of them (Nomad's RateScaledInterval): four heartbeats per timeout, as
// Spark, while that keeps the master under MaxHeartbeatsPerSecond; beyond,
// as long as the rate asks, but never more than a third of the timeout: a
// worker may lose one heartbeat (and be 10% late, the jitter workers add)
// and still be heard within the timeout. Past that size the rate grows with
// the fleet (3 heartbeats per timeout per worker).
func (c Config) heartbeatInterval(workers int) time.Duration {
	base, most := c.WorkerTimeout/4, c.WorkerTimeout/3
	scaled := time.Duration(float64(workers) / float64(c.MaxHeartbeatsPerSecond) * float64(time.Second))
	return min(max(base, scaled), most)
}

// tickInterval is how often the loop checks timeouts: often enough that a
// silent worker is DEAD within its timeout plus half a second at most.
func (c Config) tickInterval() time.Duration {
	return min(max(c.WorkerTimeout/20, 20*time.Millisecond), 500*time.Millisecond)
}

// pauseThreshold: a gap between ticks longer than this means the loop was
// paused, not that workers went silent. Ten ticks, at least a second, at
// most half the worker timeout.
func (c Config) pauseThreshold() time.Duration {
	return min(max(10*c.tickInterval(), time.Second), c.WorkerTimeout/2)
}

// Clock tells the time; tests use a fake one.
type Clock interface {
	Now() time.Time
}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

// workerClient is how the master calls workers. With TLS it proves itself
// with its certificate alone and talks to worker certificates only (the
// outbox asks for the one of each worker's id): the operator secret never
// goes to a worker, so a process at a worker's address learns nothing.
// Without TLS it sends the secret (see docs/SECURITY.md).
//
// Its idle pool holds a connection for each of up to workerIdleConns
// workers (the outbox sends each worker one command at a time), so that a
// busy cluster reuses connections instead of dialing one per command.
func (c Config) workerClient(timeout time.Duration) *httpx.Client {
	if c.TLS == nil {
		return httpx.NewClient(c.Secret, timeout).WithIdlePool(workerIdleConns, 1)
	}
	return httpx.NewClient("", timeout).WithIdlePool(workerIdleConns, 1).WithTLS(c.TLS.ClientConfig(security.RoleWorker))
}

// workerIdleConns bounds the idle connections the master keeps to workers:
// one per worker for the workers it sends to at once, without holding a
// file descriptor for every worker of a 100,000-worker fleet.
const workerIdleConns = 2048
