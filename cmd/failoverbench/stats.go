package main

import (
	"math"
	"slices"
	"time"
)

// Summary describes a set of durations in milliseconds. Percentiles are
// nearest-rank: always a value that was observed, so with 20 samples the
// p99 is the largest one.
type Summary struct {
	N    int     `json:"n"`
	Min  float64 `json:"minMs"`
	Mean float64 `json:"meanMs"`
	P50  float64 `json:"p50Ms"`
	P90  float64 `json:"p90Ms"`
	P99  float64 `json:"p99Ms"`
	Max  float64 `json:"maxMs"`
}

// percentile is the nearest-rank percentile (0 < p <= 100) of sorted: the
// smallest value such that at least p% of the values are at most it. Zero
// for an empty slice.
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

// summarize describes ds (left unchanged).
func summarize(ds []time.Duration) Summary {
	if len(ds) == 0 {
		return Summary{}
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	var sum time.Duration
	for _, d := range s {
		sum += d
	}
	return Summary{
		N:    len(s),
		Min:  ms(s[0]),
		Mean: ms(sum / time.Duration(len(s))),
		P50:  ms(percentile(s, 50)),
		P90:  ms(percentile(s, 90)),
		P99:  ms(percentile(s, 99)),
		Max:  ms(s[len(s)-1]),
	}
}

// ms is d in milliseconds, rounded to the microsecond.
func ms(d time.Duration) float64 {
	return math.Round(float64(d)/float64(time.Microsecond)) / 1000
}

// rate is count per second over d; zero when d is not positive.
func rate(count int, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return math.Round(float64(count)/d.Seconds()*10) / 10
}

// slowRounds returns the indexes of the durations that stand out: above
// threshold when it is positive, else above both twice the median and the
// median plus a second (a failover is a few seconds; a round a second or
// more slower than usual is worth reading the logs of).
func slowRounds(ds []time.Duration, threshold time.Duration) []int {
	if len(ds) == 0 {
		return nil
	}
	limit := threshold
	if limit <= 0 {
		s := slices.Clone(ds)
		slices.Sort(s)
		med := percentile(s, 50)
		limit = max(2*med, med+time.Second)
	}
	var out []int
	for i, d := range ds {
		if d > limit {
			out = append(out, i)
		}
	}
	return out
}
