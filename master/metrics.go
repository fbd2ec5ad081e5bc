package master

import (
	"context"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/berth-cluster/berth/internal/version"
	"github.com/berth-cluster/berth/wire"
)

// Metrics (docs/METRICS.md). Counters are bumped by the loop's transitions
// (a counter is goroutine-safe; bumping it is not I/O); the state's gauges
// are read from the loop once per scrape (stateCollector), so they are
// never out of step with the API. Every Master has its own registry.

type metrics struct {
	reg               *prometheus.Registry
	launches          prometheus.Counter
	executorEnds      *prometheus.CounterVec
	workerExpiries    prometheus.Counter
	driverRelaunches  prometheus.Counter
	heartbeats        prometheus.Counter
	leadershipChanges prometheus.Counter
	scheduleRound     prometheus.Histogram
	recovery          prometheus.Gauge
	writes            *prometheus.HistogramVec
	http              *prometheus.HistogramVec
	preemptions       *prometheus.CounterVec
	exclusions        prometheus.Counter
}

func newMetrics() *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		launches: prometheus.NewCounter(prometheus.CounterOpts{Name: "berth_master_executor_launches_total",
			Help: "Executors placed (their placement committed and the launch sent)."}),
		executorEnds: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "berth_master_executor_ends_total",
			Help: "Executors that ended, by final state: EXITED, FAILED, KILLED, LOST (their worker was lost)."}, []string{"state"}),
		workerExpiries: prometheus.NewCounter(prometheus.CounterOpts{Name: "berth_master_worker_expiries_total",
			Help: "Workers declared DEAD for missing heartbeats (--worker-timeout)."}),
		driverRelaunches: prometheus.NewCounter(prometheus.CounterOpts{Name: "berth_master_driver_relaunches_total",
			Help: "Supervised drivers relaunched under a new id after their worker was lost."}),
		heartbeats: prometheus.NewCounter(prometheus.CounterOpts{Name: "berth_master_heartbeats_total",
			Help: "Worker heartbeats received by this master as the leader."}),
		leadershipChanges: prometheus.NewCounter(prometheus.CounterOpts{Name: "berth_master_leadership_gained_total",
			Help: "Times this master was elected leader."}),
		scheduleRound: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "berth_master_schedule_round_seconds",
			Help: "Duration of one scheduling pass (drivers, then executors).", Buckets: prometheus.ExponentialBuckets(1e-5, 4, 10)}),
		recovery: prometheus.NewGauge(prometheus.GaugeOpts{Name: "berth_master_last_recovery_seconds",
			Help: "Time from this master's last election to ALIVE."}),
		writes: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "berth_master_writes_seconds",
			Help:    "Durable writes (a batch of commands through the persistence engine, Raft or bolt), by outcome.",
			Buckets: prometheus.ExponentialBuckets(1e-4, 3, 10)}, []string{"outcome"}),
		http: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "berth_http_request_duration_seconds",
			Help: "API requests by declared route, method and status code.", Buckets: prometheus.ExponentialBuckets(1e-4, 4, 9)},
			[]string{"route", "method", "code"}),
		preemptions: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "berth_master_preemptions_total",
			Help: "Executors taken back from a queue for another (or for a higher priority), by the queue they were taken from."}, []string{"queue"}),
		exclusions: prometheus.NewCounter(prometheus.CounterOpts{Name: "berth_master_exclusions_total",
			Help: "Times an app's executors were kept off a worker where two of them failed within ten minutes."}),
	}
	m.reg.MustRegister(m.launches, m.executorEnds, m.workerExpiries, m.driverRelaunches, m.heartbeats,
		m.leadershipChanges, m.scheduleRound, m.recovery, m.writes, m.http, m.preemptions, m.exclusions,
		version.Collector(), prometheus.NewGoCollector(), prometheus.NewProcessCollector(prometheus.ProcessCollectorOpts{}))
	return m
}

// metricsHandler serves the registry, with the state read at the scrape.
func (m *Master) metricsHandler() http.Handler {
	return promhttp.HandlerFor(m.core.metrics.reg, promhttp.HandlerOpts{ErrorLog: nil})
}

// stateCounts is the state the gauges show, counted in the loop.
type stateCounts struct {
	leading                              bool
	status                               wire.MasterStatus
	workers                              map[wire.WorkerState]int
	apps                                 map[wire.AppState]int
	drivers                              map[wire.DriverState]int
	executors                            map[wire.ExecutorState]int
	cores, coresUsed, memory, memoryUsed int
	waitingCores                         int
	queues                               []wire.QueueStatus
	// Workers nothing new goes to, by why; exclusions in force.
	unhealthy, diskFull, exclusions int
}

// stateCounts counts the leader's state (a follower reports only its
// status: its replica has no executors or heartbeats).
func (c *core) stateCounts() stateCounts {
	s := stateCounts{leading: c.leading(), status: c.status, workers: map[wire.WorkerState]int{}, apps: map[wire.AppState]int{},
		drivers: map[wire.DriverState]int{}, executors: map[wire.ExecutorState]int{}}
	if !s.leading {
		return s
	}
	for _, w := range c.workers {
		s.workers[w.state]++
		if w.state != wire.WorkerDead {
			s.unhealthy += b2i(w.unhealthy != "")
			s.diskFull += b2i(w.diskFull != "")
		}
		if w.state != wire.WorkerDead {
			cores, memory := w.committedUse()
			s.cores, s.coresUsed, s.memory, s.memoryUsed = s.cores+w.rec.Cores, s.coresUsed+cores, s.memory+w.rec.MemoryMB, s.memoryUsed+memory
		}
	}
	for _, a := range c.appOrder {
		s.apps[a.state]++
		s.exclusions += len(a.excluded)
		for _, e := range a.executors {
			if !e.launching {
				s.executors[e.state]++
			}
		}
		if a.eligible() && a.coresLeft() > 0 && a.rec.Desc.MaxCores > 0 {
			s.waitingCores += a.coresLeft()
		}
	}
	for _, d := range c.drivers {
		s.drivers[driverStatus(d).State]++
	}
	for _, q := range c.sortedQueues() {
		s.queues = append(s.queues, c.queueStatus(q))
	}
	return s
}

// stateCollector reads the state's gauges from the loop at each scrape.
type stateCollector struct{ m *Master }

var (
	descLeader    = prometheus.NewDesc("berth_master_leader", "1 if this master leads (and answered as the leader).", nil, nil)
	descStatus    = prometheus.NewDesc("berth_master_status", "1 for this master's status: ALIVE, RECOVERING, COMPLETING_RECOVERY or STANDBY.", []string{"status"}, nil)
	descWorkers   = prometheus.NewDesc("berth_workers", "Workers by state (leader only).", []string{"state"}, nil)
	descApps      = prometheus.NewDesc("berth_apps", "Active applications by state (leader only).", []string{"state"}, nil)
	descDrivers   = prometheus.NewDesc("berth_drivers", "Active drivers by state (leader only).", []string{"state"}, nil)
	descExecutors = prometheus.NewDesc("berth_executors", "Live executors by state (leader only).", []string{"state"}, nil)
	descCores     = prometheus.NewDesc("berth_cores", "Cores of the workers not DEAD: total, and used by executors and drivers.", []string{"kind"}, nil)
	descMemory    = prometheus.NewDesc("berth_memory_bytes", "Memory of the workers not DEAD: total, and used.", []string{"kind"}, nil)
	descWaiting   = prometheus.NewDesc("berth_waiting_cores", "Cores that apps with a maxCores still want.", nil, nil)
	descRaft      = prometheus.NewDesc("berth_raft", "This master's Raft figures: term, commit_index, applied_index, last_log_index.", []string{"figure"}, nil)
	descContact   = prometheus.NewDesc("berth_raft_last_contact_seconds", "Time since this follower last heard from the leader (0 on the leader).", nil, nil)
	descQueue     = prometheus.NewDesc("berth_queue", "Each queue's use, fair share and waiting demand, by resource (cores, memory_mb, each custom resource), as of the last scheduling round (leader only).", []string{"queue", "kind", "resource"}, nil)
	descQueueDS   = prometheus.NewDesc("berth_queue_dominant_share", "Each queue's dominant share of the cluster, used and fair (leader only).", []string{"queue", "kind"}, nil)
	descShunned   = prometheus.NewDesc("berth_workers_shunned", "Live workers nothing new is placed on, by why: unhealthy (processes of several apps failed there), disk_full (leader only).", []string{"reason"}, nil)
	descExcluded  = prometheus.NewDesc("berth_exclusions", "(app, worker) exclusions in force: an app's executors kept off a worker where they failed (leader only).", nil, nil)
)

func (s stateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descLeader, descStatus, descWorkers, descApps, descDrivers, descExecutors, descCores, descMemory, descWaiting, descRaft, descContact, descQueue, descQueueDS, descShunned, descExcluded} {
		ch <- d
	}
}

func (s stateCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	st, err := ask(ctx, s.m, func(c *core, r reply[stateCounts]) { r(c.stateCounts(), nil) })
	if err == nil {
		gauge := func(d *prometheus.Desc, v float64, labels ...string) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
		}
		gauge(descLeader, b2f(st.leading))
		for _, status := range []wire.MasterStatus{wire.MasterAlive, wire.MasterRecovering, wire.MasterCompletingRecovery, wire.MasterStandby} {
			gauge(descStatus, b2f(st.status == status), string(status))
		}
		if st.leading {
			// Every state an active thing can be in is reported, at 0 when
			// none is: an alert on berth_workers{state="DEAD"} > 0 sees a
			// series, not absent data, while all is well.
			byState(st.workers, func(state string, n int) { gauge(descWorkers, float64(n), state) },
				wire.WorkerAlive, wire.WorkerDead, wire.WorkerUnknown, wire.WorkerDecommissioned, wire.WorkerDecommissioning)
			byState(st.apps, func(state string, n int) { gauge(descApps, float64(n), state) },
				wire.AppWaiting, wire.AppRunning, wire.AppUnknown)
			byState(st.drivers, func(state string, n int) { gauge(descDrivers, float64(n), state) },
				wire.DriverSubmitted, wire.DriverRunning, wire.DriverRelaunching, wire.DriverUnknown)
			byState(st.executors, func(state string, n int) { gauge(descExecutors, float64(n), state) },
				wire.ExecutorLaunching, wire.ExecutorRunning)
			gauge(descCores, float64(st.cores), "total")
			gauge(descCores, float64(st.coresUsed), "used")
			gauge(descMemory, float64(st.memory)*(1<<20), "total")
			gauge(descMemory, float64(st.memoryUsed)*(1<<20), "used")
			gauge(descWaiting, float64(st.waitingCores))
			gauge(descShunned, float64(st.unhealthy), "unhealthy")
			gauge(descShunned, float64(st.diskFull), "disk_full")
			gauge(descExcluded, float64(st.exclusions))
			for _, q := range st.queues {
				for kind, a := range map[string]wire.Amount{"used": q.InUse, "fair_share": q.FairShare, "waiting": q.Waiting} {
					gauge(descQueue, float64(a.Cores), q.Name, kind, "cores")
					gauge(descQueue, float64(a.MemoryMB), q.Name, kind, "memory_mb")
					for r, v := range a.Resources {
						gauge(descQueue, v, q.Name, kind, r)
					}
				}
				gauge(descQueueDS, q.DominantShare, q.Name, "used")
				gauge(descQueueDS, q.FairDominantShare, q.Name, "fair")
			}
		}
	}
	if r := s.m.repl; r != nil {
		stats := r.Stats()
		for _, f := range []string{"term", "commit_index", "applied_index", "last_log_index"} {
			if n, err := strconv.ParseFloat(stats[f], 64); err == nil {
				ch <- prometheus.MustNewConstMetric(descRaft, prometheus.GaugeValue, n, f)
			}
		}
		if d, ok := lastContact(stats["last_contact"]); ok {
			ch <- prometheus.MustNewConstMetric(descContact, prometheus.GaugeValue, d.Seconds())
		}
	}
}

// lastContact parses Raft's last_contact ("0" on the leader, "never", or a
// duration).
func lastContact(s string) (time.Duration, bool) {
	switch s {
	case "0":
		return 0, true
	case "", "never":
		return 0, false
	}
	d, err := time.ParseDuration(s)
	return d, err == nil
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// instrument records each request's declared route (the mux pattern, never
// the raw path), method, status and latency.
func (m *metrics) instrument(mux *http.ServeMux, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, pattern := mux.Handler(r)
		if _, path, ok := strings.Cut(pattern, " "); ok {
			pattern = path
		}
		if pattern == "" {
			pattern = "unmatched"
		}
		rec := &statusRecorder{ResponseWriter: w, code: http.StatusOK}
		start := time.Now()
		h.ServeHTTP(rec, r)
		m.http.WithLabelValues(pattern, r.Method, strconv.Itoa(rec.code)).Observe(time.Since(start).Seconds())
	})
}

// statusRecorder remembers the status written; it keeps Flush (event
// streams) and Unwrap (http.ResponseController) working.
type statusRecorder struct {
	http.ResponseWriter
	code  int
	wrote bool
}

func (s *statusRecorder) WriteHeader(code int) {
	if !s.wrote {
		s.code, s.wrote = code, true
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(p []byte) (int, error) {
	s.wrote = true
	return s.ResponseWriter.Write(p)
}

func (s *statusRecorder) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// timeRound observes a scheduling pass begun at start (real time: the
// loop's clock may be a test's).
func (m *metrics) timeRound(start time.Time) { m.scheduleRound.Observe(time.Since(start).Seconds()) }

// observeWrite records one durable write's latency and outcome.
func (m *metrics) observeWrite(took time.Duration, err error) {
	outcome := "committed"
	if err != nil {
		outcome = "failed"
	}
	m.writes.WithLabelValues(outcome).Observe(took.Seconds())
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// byState reports counts through emit: each of always (0 when absent),
// then any other state counted, in a stable order.
func byState[S ~string](counts map[S]int, emit func(state string, n int), always ...S) {
	for _, state := range always {
		emit(string(state), counts[state])
	}
	for _, state := range slices.Sorted(maps.Keys(counts)) {
		if !slices.Contains(always, state) {
			emit(string(state), counts[state])
		}
	}
}
