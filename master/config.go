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
	"fmt"
	"net/url"
	"time"

	"github.com/berth-cluster/berth/internal/httpx"
	"github.com/berth-cluster/berth/placement"
	"github.com/berth-cluster/berth/security"
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
	MinCoreUnit        int
	MaxExecutorRetries int // consecutive executor failures that fail an app; 0: the default (10); < 0: never
	RetainedApps       int // finished apps kept for status
	RetainedDrivers    int // finished drivers kept for status
	MaxDrivers         int // drivers running at once (--max-drivers); 0: no bound
	// MaxHeartbeatsPerSecond is the heartbeat rate the master aims at
	// (--max-heartbeats-per-second): the interval it asks of workers grows
	// with their number (heartbeatInterval). 0: the default.
	MaxHeartbeatsPerSecond int

	// Caps (limits.go); 0 takes the default.
	MaxActiveApps      int // apps registered and not ended
	MaxActiveDrivers   int // drivers submitted and not ended
	MaxSubmissionBytes int // bytes of a submission's command and environment
	MaxStreamsPerApp   int // event streams open on one app

	CommandTimeout time.Duration // per master → worker request
}

// Defaults of Config, Spark's where Spark has one.
const (
	DefaultWorkerTimeout          = 60 * time.Second
	DefaultMaxHeartbeatsPerSecond = 500
	DefaultMaxExecutorRetries     = 10
	DefaultRetained               = 200
	DefaultCommandTimeout         = 5 * time.Second
	// reaperIterations: DEAD workers stay listed this many worker timeouts
	// (Spark's spark.dead.worker.persistence).
	reaperIterations = 15
	// defaultMemoryPerExecutorMB: Spark's spark.executor.memory default.
	defaultMemoryPerExecutorMB = 1024
	defaultDriverMemoryMB      = 1024
)

// withDefaults fills unset durations and limits and checks the rest.
func (c Config) withDefaults() (Config, error) {
	if c.ID == "" {
		return c, fmt.Errorf("master id is empty")
	}
	if u, err := url.Parse(c.Advertise); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return c, fmt.Errorf("advertised address %q is not an http(s) URL", c.Advertise)
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
	if min(c.MaxActiveApps, c.MaxActiveDrivers, c.MaxSubmissionBytes, c.MaxStreamsPerApp) < 0 {
		return c, fmt.Errorf("caps must not be negative")
	}
	if c.Placement == "" {
		c.Placement = "spread"
	}
	for name, d := range map[string]time.Duration{"worker timeout": c.WorkerTimeout, "app timeout": c.AppTimeout, "recovery timeout": c.RecoveryTimeout, "command timeout": c.CommandTimeout} {
		if d < 0 {
			return c, fmt.Errorf("%s %s is negative", name, d)
		}
	}
	if c.DefaultCores < 0 || c.DefaultCores > maxAppCores {
		return c, fmt.Errorf("default cores %d out of range 0..%d", c.DefaultCores, maxAppCores)
	}
	if c.RetainedApps < 0 || c.RetainedDrivers < 0 || c.MaxDrivers < 0 {
		return c, fmt.Errorf("retained apps and drivers must not be negative")
	}
	if _, err := placement.New(c.Placement, placement.Options{Order: c.WorkerOrder, MinCoreUnit: c.MinCoreUnit}); err != nil {
		return c, err
	}
	return c, nil
}

// maxAppCores bounds an app's maxCores (it may span many workers).
const maxAppCores = 1 << 24

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
