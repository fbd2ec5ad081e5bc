package main

import (
	"math"
	"slices"
	"sync"
	"time"
)

// Summary describes a set of durations, in milliseconds (JSON-friendly).
type Summary struct {
	N    int     `json:"n"`
	Min  float64 `json:"minMs"`
	Mean float64 `json:"meanMs"`
	P50  float64 `json:"p50Ms"`
	P90  float64 `json:"p90Ms"`
	P99  float64 `json:"p99Ms"`
	Max  float64 `json:"maxMs"`
}

// percentile is the nearest-rank percentile (0 < p <= 100) of sorted
// durations: the smallest value such that at least p% of the values are at
// most it. Zero for an empty slice.
func percentile(sorted []time.Duration, p float64) time.Duration {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	if p <= 0 {
		return sorted[0]
	}
	rank := int(math.Ceil(p / 100 * float64(n)))
	rank = min(max(rank, 1), n)
	return sorted[rank-1]
}

// summarize sorts ds in place and describes it.
func summarize(ds []time.Duration) Summary {
	if len(ds) == 0 {
		return Summary{}
	}
	slices.Sort(ds)
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	return Summary{
		N:    len(ds),
		Min:  ms(ds[0]),
		Mean: ms(sum / time.Duration(len(ds))),
		P50:  ms(percentile(ds, 50)),
		P90:  ms(percentile(ds, 90)),
		P99:  ms(percentile(ds, 99)),
		Max:  ms(ds[len(ds)-1]),
	}
}

// ms is d in milliseconds, rounded to the microsecond.
func ms(d time.Duration) float64 {
	return math.Round(float64(d)/float64(time.Microsecond)) / 1000
}

// rate is count per second over d; 0 when d is not positive.
func rate(count int, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(count) / d.Seconds()
}

// hbStats collects heartbeat figures while measuring is on.
type hbStats struct {
	mu     sync.Mutex
	on     bool
	rtt    []time.Duration // request sent → answer read
	lag    []time.Duration // scheduled time → answer read (includes waiting for a request slot)
	ok     int
	errs   int
	maxGap time.Duration // longest time between two acknowledged heartbeats of one worker
	gapOf  string
}

func (s *hbStats) setOn(on bool) {
	s.mu.Lock()
	s.on = on
	s.mu.Unlock()
}

func (s *hbStats) record(ok bool, rtt, lag, gap time.Duration, worker string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.on {
		return
	}
	if !ok {
		s.errs++
		return
	}
	s.ok++
	s.rtt = append(s.rtt, rtt)
	s.lag = append(s.lag, lag)
	if gap > s.maxGap {
		s.maxGap, s.gapOf = gap, worker
	}
}

// noteGap accounts for a worker whose last acknowledged heartbeat is gap old
// when the window closes.
func (s *hbStats) noteGap(gap time.Duration, worker string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if gap > s.maxGap {
		s.maxGap, s.gapOf = gap, worker
	}
}

// cpuTicksPerSecond is USER_HZ, 100 on every Linux architecture Go runs on.
const cpuTicksPerSecond = 100
