package load

import (
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// p99Bound reads the bucket the 99th percentile falls in from a real
// exposition of a histogram.
func TestP99BoundReadsTheHistogram(t *testing.T) {
	const text = `# HELP r rounds
# TYPE r histogram
r_bucket{le="0.001"} 90
r_bucket{le="0.005"} 98
r_bucket{le="0.01"} 99
r_bucket{le="+Inf"} 100
r_sum 0.3
r_count 100
# HELP empty none yet
# TYPE empty histogram
empty_bucket{le="0.001"} 0
empty_bucket{le="+Inf"} 0
empty_sum 0
empty_count 0
# HELP tail all past the last bucket
# TYPE tail histogram
tail_bucket{le="0.001"} 1
tail_bucket{le="+Inf"} 10
tail_sum 9
tail_count 10
`
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		family string
		bound  float64
		n      int64
	}{
		{"r", 0.01, 100},
		{"empty", -1, 0},
		{"tail", -1, 10},
		{"missing", -1, 0},
	} {
		if bound, n := p99Bound(families[c.family]); bound != c.bound || n != c.n {
			t.Errorf("%s: p99Bound = %v, %d; want %v, %d", c.family, bound, n, c.bound, c.n)
		}
	}
}
