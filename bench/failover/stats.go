package failover

import (
	"math"
	"slices"
	"time"

	"github.com/berth-cluster/berth/bench/internal/benchstat"
)

// Summary is the shared summary of durations, under the name used here.
type Summary = benchstat.Summary

// rate is count per second over d; zero when d is not positive.
func rate(count int, d time.Duration) float64 {
	return math.Round(benchstat.Rate(count, d)*10) / 10
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
		med := benchstat.Percentile(s, 50)
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
