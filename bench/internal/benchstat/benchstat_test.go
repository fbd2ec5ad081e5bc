package benchstat

import (
	"slices"
	"testing"
	"time"
)

func durations(ms ...int) []time.Duration {
	out := make([]time.Duration, len(ms))
	for i, m := range ms {
		out[i] = time.Duration(m) * time.Millisecond
	}
	return out
}

func TestPercentileNearestRank(t *testing.T) {
	one := durations(1, 2, 3, 4, 5, 6, 7, 8, 9, 10)
	hundred := make([]time.Duration, 100)
	for i := range hundred {
		hundred[i] = time.Duration(i+1) * time.Millisecond
	}
	cases := []struct {
		in   []time.Duration
		p    float64
		want time.Duration
	}{
		{nil, 50, 0},
		{durations(7), 1, 7 * time.Millisecond},
		{durations(7), 99, 7 * time.Millisecond},
		{one, 50, 5 * time.Millisecond},
		{one, 90, 9 * time.Millisecond},
		{one, 91, 10 * time.Millisecond},
		{one, 99, 10 * time.Millisecond},
		{one, 100, 10 * time.Millisecond},
		{one, 0, 1 * time.Millisecond},
		{one, 10, 1 * time.Millisecond},
		{one, 11, 2 * time.Millisecond},
		{hundred, 99, 99 * time.Millisecond},
		{hundred, 99.5, 100 * time.Millisecond},
		{hundred, 50, 50 * time.Millisecond},
	}
	for _, c := range cases {
		if got := Percentile(c.in, c.p); got != c.want {
			t.Errorf("Percentile(%d values, %v) = %v, want %v", len(c.in), c.p, got, c.want)
		}
	}
}

func TestSummarize(t *testing.T) {
	if s := Summarize(nil); s != (Summary{}) {
		t.Errorf("empty: %+v", s)
	}
	in := durations(10, 1, 4, 3, 2, 9, 8, 7, 6, 5)
	before := slices.Clone(in)
	s := Summarize(in)
	want := Summary{N: 10, Min: 1, Mean: 5.5, P50: 5, P90: 9, P99: 10, Max: 10}
	if s != want {
		t.Errorf("summarize = %+v, want %+v", s, want)
	}
	if !slices.Equal(in, before) {
		t.Error("Summarize changed its input")
	}
	// Sub-millisecond values keep microseconds; negatives stay negative.
	s = Summarize([]time.Duration{1500 * time.Microsecond, -250 * time.Microsecond})
	if s.Min != -0.25 || s.Max != 1.5 || s.Mean != 0.625 {
		t.Errorf("fractions: %+v", s)
	}
}

func TestRate(t *testing.T) {
	if got := Rate(500, 250*time.Millisecond); got != 2000 {
		t.Errorf("rate = %v", got)
	}
	if got := Rate(5, 0); got != 0 {
		t.Errorf("rate over nothing = %v", got)
	}
}
