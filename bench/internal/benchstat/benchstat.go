// Package benchstat holds what berth's benchmark commands share: summaries
// of measured durations and a description of the machine they ran on.
package benchstat

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"runtime"
	"slices"
	"strings"
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

// Percentile is the nearest-rank percentile (0 < p <= 100) of sorted: the
// smallest value such that at least p% of the values are at most it. Zero
// for an empty slice.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	if p <= 0 {
		return sorted[0]
	}
	rank := int(math.Ceil(p / 100 * float64(n)))
	return sorted[min(max(rank, 1), n)-1]
}

// Summarize describes ds (left unchanged).
func Summarize(ds []time.Duration) Summary {
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
		N: len(s), Min: Ms(s[0]), Mean: Ms(sum / time.Duration(len(s))),
		P50: Ms(Percentile(s, 50)), P90: Ms(Percentile(s, 90)), P99: Ms(Percentile(s, 99)),
		Max: Ms(s[len(s)-1]),
	}
}

// Ms is d in milliseconds, rounded to the microsecond.
func Ms(d time.Duration) float64 {
	return math.Round(float64(d)/float64(time.Microsecond)) / 1000
}

// Rate is count per second over d; 0 when d is not positive.
func Rate(count int, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(count) / d.Seconds()
}

// Host describes the machine a benchmark ran on.
type Host struct {
	CPU        string `json:"cpu"`
	Cores      int    `json:"cores"`
	GOMAXPROCS int    `json:"gomaxprocs"`
	MemoryMB   int    `json:"memoryMB"`
	Kernel     string `json:"kernel"`
	OS         string `json:"os"`
	GoVersion  string `json:"goVersion"` // of the benchmark tool
}

// DescribeHost reads this machine's description from /proc where it can.
func DescribeHost() Host {
	h := Host{
		Cores: runtime.NumCPU(), GOMAXPROCS: runtime.GOMAXPROCS(0),
		OS: runtime.GOOS + "/" + runtime.GOARCH, GoVersion: runtime.Version(),
	}
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				h.CPU = strings.TrimSpace(v)
				break
			}
		}
		f.Close()
	}
	if data, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kb int
		if _, err := fmt.Sscanf(string(data), "MemTotal: %d kB", &kb); err == nil {
			h.MemoryMB = kb / 1024
		}
	}
	if data, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		h.Kernel = strings.TrimSpace(string(data))
	}
	return h
}

// LoadAverage is /proc/loadavg's first three fields: the other work on the
// machine while a benchmark ran.
func LoadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}
