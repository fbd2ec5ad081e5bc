package load

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/berth-cluster/berth/bench/internal/benchstat"
	"github.com/berth-cluster/berth/internal/poll"
	"github.com/berth-cluster/berth/wire"
)

// apiProbe is the API as a user sees it while the fleet heartbeats: every
// probeEvery a status read (the summary, GET /v1/cluster?workers=false) and
// an app registered (POST /v1/apps, acknowledged once durable) and killed.
// The apps ask for more memory than any worker has: each one makes the
// master run a scheduling round, and none starts anything.
type apiProbe struct {
	mu                   sync.Mutex
	status, submit, kill []time.Duration
	errors               int
	firstErr             string
}

const probeEvery = 100 * time.Millisecond

func (p *apiProbe) run(ctx context.Context, mc *masterClient) {
	for n := 0; ; n++ {
		p.time(&p.status, func() error {
			var cs wire.ClusterStatus
			return mc.unbounded(ctx, summaryRequest(), &cs)
		})
		var sub wire.Submitted
		if p.time(&p.submit, func() error {
			desc := wire.AppDescription{Name: fmt.Sprintf("probe-%d", n), Command: []string{"true"}, MaxCores: 1, MemoryPerExecutorMB: 1 << 29}
			return mc.unbounded(ctx, on(wire.MasterAPI.RegisterApp, desc), &sub)
		}) {
			p.time(&p.kill, func() error {
				var st wire.AppStatus
				return mc.unbounded(context.WithoutCancel(ctx), on(wire.MasterAPI.KillApp, wire.None{}, sub.ID), &st)
			})
		}
		if !poll.Sleep(ctx, probeEvery) {
			return
		}
	}
}

// time runs one call, records its latency (or its error) and reports
// whether it succeeded.
func (p *apiProbe) time(into *[]time.Duration, call func() error) bool {
	t0 := time.Now()
	err := call()
	d := time.Since(t0)
	p.mu.Lock()
	defer p.mu.Unlock()
	if err != nil {
		p.errors++
		if p.firstErr == "" {
			p.firstErr = err.Error()
		}
		return false
	}
	*into = append(*into, d)
	return true
}

// ProbeResult is apiProbe's report.
type ProbeResult struct {
	Status     Summary `json:"status"` // GET /v1/cluster?workers=false
	Submit     Summary `json:"submit"` // POST /v1/apps
	Kill       Summary `json:"kill"`   // DELETE /v1/apps/{id}
	Errors     int     `json:"errors"`
	FirstError string  `json:"firstError,omitempty"`
	// RoundP99Ms bounds the 99th percentile of the master's scheduling
	// rounds over its life (the upper edge of the histogram bucket it falls
	// in: berth_master_schedule_round_seconds); -1 when unknown, or when
	// it is past the last finite bucket (2.6 s): Rounds > 0 tells which.
	RoundP99Ms float64 `json:"roundP99Ms"`
	Rounds     int64   `json:"rounds"`
	// MasterRSSMB is the master's resident memory at the end of the window.
	MasterRSSMB float64 `json:"masterRssMB"`
}

func (p *apiProbe) result() ProbeResult {
	p.mu.Lock()
	defer p.mu.Unlock()
	return ProbeResult{Status: benchstat.Summarize(p.status), Submit: benchstat.Summarize(p.submit), Kill: benchstat.Summarize(p.kill),
		Errors: p.errors, FirstError: p.firstErr, RoundP99Ms: -1}
}

// roundP99 reads the master's scheduling-round histogram from /metrics.
func roundP99(ctx context.Context, mc *masterClient) (p99Ms float64, rounds int64, err error) {
	r := on(wire.MasterAPI.Metrics, wire.None{})
	resp, err := mc.api.Open(ctx, r.method, mc.base()+r.path, nil)
	if err != nil {
		return -1, 0, err
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return -1, 0, fmt.Errorf("reading the master's metrics: %w", err)
	}
	p99, rounds := p99Bound(families["berth_master_schedule_round_seconds"])
	if p99 < 0 {
		return -1, rounds, nil
	}
	return p99 * 1000, rounds, nil
}

// p99Bound is the upper edge of the bucket of f's histogram (its first
// series) that the 99th percentile falls in, and the count of samples; -1
// when there are none or the percentile is past the last finite bucket.
func p99Bound(f *dto.MetricFamily) (float64, int64) {
	if f == nil || len(f.Metric) == 0 || f.Metric[0].Histogram == nil {
		return -1, 0
	}
	h := f.Metric[0].Histogram
	n := int64(h.GetSampleCount())
	if n == 0 {
		return -1, 0
	}
	for _, b := range h.Bucket {
		if math.IsInf(b.GetUpperBound(), 1) {
			break
		}
		if float64(b.GetCumulativeCount()) >= 0.99*float64(n) {
			return b.GetUpperBound(), n
		}
	}
	return -1, n
}
