package load

import (
	"sync"
	"time"

	"github.com/berth-cluster/berth/bench/internal/benchstat"
)

// Summary is the shared summary of durations, under the name used here.
type Summary = benchstat.Summary

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
