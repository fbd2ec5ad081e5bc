package worker

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/berth-cluster/berth/internal/version"
	"github.com/berth-cluster/berth/wire"
)

// The worker's metrics (docs/METRICS.md), in a registry of its own.
type metrics struct {
	reg      *prometheus.Registry
	launches *prometheus.CounterVec
	exits    *prometheus.CounterVec
	sweeps   prometheus.Counter
	removed  prometheus.Counter
	checks   *prometheus.CounterVec
}

func newMetrics(procs *procTable) *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		launches: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "berth_worker_launches_total",
			Help: "Processes started, by kind (executor, driver); a supervised driver's restarts count."}, []string{"kind"}),
		exits: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "berth_worker_exits_total",
			Help: "Processes that ended, by kind and final state (EXITED, FAILED, KILLED, FINISHED, ERROR)."}, []string{"kind", "state"}),
		sweeps: prometheus.NewCounter(prometheus.CounterOpts{Name: "berth_worker_cleanup_sweeps_total",
			Help: "Sweeps of the work directory for stale directories (--cleanup-interval)."}),
		removed: prometheus.NewCounter(prometheus.CounterOpts{Name: "berth_worker_cleanup_removed_total",
			Help: "Stale work directories removed (--cleanup-ttl)."}),
		checks: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "berth_worker_checks_total",
			Help: "Health checks run, by type (http, tcp, exec) and result (pass, fail)."}, []string{"type", "result"}),
	}
	m.reg.MustRegister(m.launches, m.exits, m.sweeps, m.removed, m.checks, procCollector{procs}, version.Collector(),
		prometheus.NewGoCollector(), prometheus.NewProcessCollector(prometheus.ProcessCollectorOpts{}))
	return m
}

func (m *metrics) handler() http.Handler { return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{}) }

func kindName(k procKind) string {
	if k == kindExecutor {
		return "executor"
	}
	return "driver"
}

// procCollector counts the live processes by kind and state at a scrape.
type procCollector struct{ t *procTable }

var descProcs = prometheus.NewDesc("berth_worker_processes", "Live processes by kind and state.", []string{"kind", "state"}, nil)

func (c procCollector) Describe(ch chan<- *prometheus.Desc) { ch <- descProcs }

func (c procCollector) Collect(ch chan<- prometheus.Metric) {
	type key struct{ kind, state string }
	counts := map[key]int{}
	c.t.mu.Lock()
	for p := range c.t.liveLocked() {
		counts[key{kindName(p.kind), p.state}]++
	}
	c.t.mu.Unlock()
	// Running processes of each kind are reported at 0 when there are
	// none: alerts see a series, not absent data, on an idle worker.
	for _, kind := range []procKind{kindExecutor, kindDriver} {
		if k := (key{kindName(kind), string(wire.ExecutorRunning)}); counts[k] == 0 {
			counts[k] = 0
		}
	}
	for k, n := range counts {
		ch <- prometheus.MustNewConstMetric(descProcs, prometheus.GaugeValue, float64(n), k.kind, k.state)
	}
}
