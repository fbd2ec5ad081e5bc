package placement

import "math"

// Balance scores sum up the quality columns in one number, so that "policy A
// beats B" has a stated meaning. For each of the five quality metrics, a
// policy's figure is divided by the best (lowest) figure of the same run;
// the score is the geometric mean of those five ratios. 1.00 means best in
// every column; 1.25 means a quarter worse than the best on average (in the
// geometric sense). Every metric weighs the same, and the raw columns stay
// in the table for anyone who weighs them differently.
//
// Metrics that can be zero get a floor added to both sides of the ratio,
// so that "0.1% against 0%" does not count as infinitely worse:
//   - small-executor share: +1 percentage point,
//   - stranded cores: +1% of the alive cores (via StrandedPct),
//   - waiting cores: +1 core.
//
// exec/min (at least 1) and blast radius (above 0 when any app runs) need none.
func balanceScores(results []*Result) []float64 {
	if len(results) == 0 {
		return nil
	}
	metrics := []func(m Metrics) float64{
		func(m Metrics) float64 { return m.ExecRatio },
		func(m Metrics) float64 { return 100*m.SmallShare + 1 },
		func(m Metrics) float64 { return m.StrandedPct + 1 },
		func(m Metrics) float64 { return m.BlastMean },
		func(m Metrics) float64 { return m.WaitingCores + 1 },
	}
	scores := make([]float64, len(results))
	for i := range scores {
		scores[i] = 1
	}
	for _, metric := range metrics {
		best := math.Inf(1)
		for _, r := range results {
			best = math.Min(best, metric(r.Metrics))
		}
		for i, r := range results {
			ratio := 1.0
			if v := metric(r.Metrics); best > 0 && v > 0 {
				ratio = v / best
			}
			scores[i] *= ratio
		}
	}
	for i := range scores {
		scores[i] = math.Pow(scores[i], 1/float64(len(metrics)))
	}
	return scores
}
