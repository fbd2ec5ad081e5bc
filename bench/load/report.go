package load

import (
	"cmp"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/berth-cluster/berth/bench/internal/benchstat"
)

// Report is everything one run found; --json writes it whole.
type Report struct {
	Tool     string    `json:"tool"`
	Scenario string    `json:"scenario"`
	Command  []string  `json:"command"`
	Started  time.Time `json:"started"`
	Elapsed  float64   `json:"elapsedSeconds"`
	Machine  Machine   `json:"machine"`
	// Load averages (1, 5, 15 min) at the start and the end: the machine
	// may be shared, and the figures mean little under a foreign load.
	LoadStart string       `json:"loadAverageStart"`
	LoadEnd   string       `json:"loadAverageEnd"`
	Masters   []MasterInfo `json:"masters"`
	Params    any          `json:"params"`
	Results   any          `json:"results"`
	Tables    []table      `json:"tables"`
	Verdict   []string     `json:"verdict"`
	// Problems: anything unexpected, from the fleet or the master's log.
	Problems []string `json:"problems"`
}

// table is one printed table; --csv writes each as a file.
type table struct {
	Name   string     `json:"name"`
	Title  string     `json:"title"`
	Header []string   `json:"header"`
	Rows   [][]string `json:"rows"`
}

func (t *table) add(cells ...any) {
	row := make([]string, len(cells))
	for i, c := range cells {
		row[i] = cell(c)
	}
	t.Rows = append(t.Rows, row)
}

func cell(c any) string {
	switch v := c.(type) {
	case string:
		return v
	case float64:
		switch {
		case v == 0:
			return "0"
		case v >= 100 || v <= -100:
			return strconv.FormatFloat(v, 'f', 0, 64)
		case v >= 10 || v <= -10:
			return strconv.FormatFloat(v, 'f', 1, 64)
		default:
			return strconv.FormatFloat(v, 'f', 2, 64)
		}
	case time.Duration:
		return cell(benchstat.Ms(v))
	default:
		return fmt.Sprint(v)
	}
}

func printHeader(w io.Writer, r *Report) {
	m := r.Machine
	fmt.Fprintf(w, "berthbench %s — %s\n", r.Scenario, r.Started.Format(time.RFC3339))
	fmt.Fprintf(w, "machine: %s, %d cores (GOMAXPROCS %d), %d MB, %s kernel %s; tool built with %s\n",
		m.CPU, m.Cores, m.GOMAXPROCS, m.MemoryMB, m.OS, m.Kernel, m.GoVersion)
	fmt.Fprintf(w, "command: %s\n", strings.Join(r.Command, " "))
	fmt.Fprintf(w, "load average at the start: %s\n", r.LoadStart)
}

func printMaster(w io.Writer, mi MasterInfo) {
	if mi.Bin == "" {
		fmt.Fprintf(w, "master: %s (not started by this tool; id %s, epoch %d)\n", mi.URL, mi.MasterID, mi.Epoch)
		return
	}
	rev := mi.Revision
	if rev == "" {
		rev = "no vcs stamp"
	}
	fmt.Fprintf(w, "master: %s (sha256 %s, %s, %s, %s) at %s\n", mi.Bin, mi.SHA256, mi.Module, rev, mi.GoVersion, mi.URL)
	fmt.Fprintf(w, "  flags: %s\n", strings.Join(mi.Args, " "))
}

func printTable(w io.Writer, t table) {
	fmt.Fprintf(w, "\n%s\n", t.Title)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, strings.Join(t.Header, "\t")+"\t")
	for _, r := range t.Rows {
		fmt.Fprintln(tw, strings.Join(r, "\t")+"\t")
	}
	tw.Flush()
}

func printFooter(w io.Writer, r *Report) {
	if len(r.Verdict) > 0 {
		fmt.Fprintln(w)
		for _, v := range r.Verdict {
			fmt.Fprintln(w, v)
		}
	}
	if len(r.Problems) > 0 {
		fmt.Fprintf(w, "\nproblems (%d):\n", len(r.Problems))
		for _, p := range r.Problems {
			fmt.Fprintln(w, "  "+p)
		}
	}
	fmt.Fprintf(w, "\nelapsed %.1fs; load average at the end: %s\n", r.Elapsed, r.LoadEnd)
}

// loadAverage is the first three fields of /proc/loadavg.
func loadAverage() string { return cmp.Or(benchstat.LoadAverage(), "unknown") }
