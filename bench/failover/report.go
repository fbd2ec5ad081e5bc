package failover

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/berth-cluster/berth/bench/internal/benchstat"
)

// Report is everything one run measured, printed as tables and optionally
// written as JSON.
type Report struct {
	Started   time.Time         `json:"started"`
	Seconds   float64           `json:"seconds"`
	Command   []string          `json:"command"`
	Machine   Machine           `json:"machine"`
	Settings  map[string]string `json:"settings"`
	Clusters  []ClusterInfo     `json:"clusters"`
	Failovers []FailoverSummary `json:"failovers,omitempty"`
	Rounds    []Round           `json:"rounds,omitempty"`
	App       *AppReport        `json:"app,omitempty"`
	Stability *Stability        `json:"steady,omitempty"`
	Submit    []SubmitResult    `json:"submit,omitempty"`
	Ratios    []Ratio           `json:"raftToBolt,omitempty"`
	TLSCost   []TLSCost         `json:"tlsToPlain,omitempty"`
	Notes     []string          `json:"notes,omitempty"`
	WorkDir   string            `json:"workDir,omitempty"` // kept: logs of slow or failed rounds
	Error     string            `json:"error,omitempty"`
}

// Machine is where the run happened and what was measured.
type Machine struct {
	benchstat.Host
	FileSystem string `json:"fileSystem"` // of the work directory (fsync cost)
	GoBinaries string `json:"goBinaries"` // the master binary's Go
	Revision   string `json:"revision,omitempty"`
	Modified   bool   `json:"modified,omitempty"` // the binaries were built from a tree with changes
	LoadStart  string `json:"loadAverageStart"`   // /proc/loadavg: other work on the machine
	LoadEnd    string `json:"loadAverageEnd"`
}

// ClusterInfo is the exact command lines of a cluster's daemons.
type ClusterInfo struct {
	Name    string              `json:"name"`
	Masters map[string][]string `json:"masters"`
	Workers int                 `json:"workers"`
	// WorkerArgs are the first worker's; the others differ in --id,
	// --host and --work-dir only.
	WorkerArgs []string `json:"workerArgs,omitempty"`
}

func (cl *cluster) info() ClusterInfo {
	ci := ClusterInfo{Name: cl.name, Masters: map[string][]string{}, Workers: len(cl.workers)}
	for _, m := range cl.masters {
		ci.Masters[m.id] = redact(m.args)
	}
	if len(cl.workers) > 0 {
		ci.WorkerArgs = redact(cl.workers[0].args)
	}
	return ci
}

// redact hides the secret's value in printed command lines.
func redact(args []string) []string {
	out := slices.Clone(args)
	for i := range out {
		if out[i] == "--secret" && i+1 < len(out) {
			out[i+1] = "<secret>"
		}
	}
	return out
}

// FailoverSummary is the statistics of one failover scenario.
type FailoverSummary struct {
	Scenario  string      `json:"scenario"`
	Rounds    int         `json:"rounds"`
	Completed int         `json:"completed"` // rounds that reached ALIVE with every worker
	Elected   Summary     `json:"elected"`
	Leading   Summary     `json:"leading"`
	Workers   Summary     `json:"workers"`
	App       *Summary    `json:"app,omitempty"`
	Alive     Summary     `json:"alive"`
	OldExit   *Summary    `json:"oldExit,omitempty"`
	Restart   Summary     `json:"restart"`
	Problems  []string    `json:"problems,omitempty"`
	Slow      []SlowRound `json:"slow,omitempty"`
}

// SlowRound is a round that took much longer than the median, with the
// merged logs of its time window.
type SlowRound struct {
	Round   int     `json:"round"`
	AliveMs float64 `json:"aliveMs"`
	Log     string  `json:"log"`
}

// AppReport is what the long-running app saw across every failover.
type AppReport struct {
	ID        string         `json:"id"`
	Executors int            `json:"executors"`
	Events    map[string]int `json:"events"`
	Incidents []string       `json:"incidents"` // executors lost or ended: should be none
}

// Ratio compares the Raft cluster with one bolt master at one concurrency.
type Ratio struct {
	Concurrency int     `json:"concurrency"`
	Raft        float64 `json:"raftPerSecond"`
	Bolt        float64 `json:"boltPerSecond"`
	RaftToBolt  float64 `json:"raftToBolt"`
}

// TLSCost compares one bolt master with TLS and one without (the secret
// alone) at one concurrency.
type TLSCost struct {
	Concurrency int     `json:"concurrency"`
	TLS         float64 `json:"tlsPerSecond"`
	Plain       float64 `json:"plainPerSecond"`
	TLSToPlain  float64 `json:"tlsToPlain"`
}

func summarizeRounds(scenario string, rounds []Round) FailoverSummary {
	fs := FailoverSummary{Scenario: scenario, Rounds: len(rounds)}
	var elected, leading, workers, app, alive, exit, restart []time.Duration
	for _, r := range rounds {
		for _, p := range r.Problems {
			fs.Problems = append(fs.Problems, fmt.Sprintf("round %d: %s", r.N, p))
		}
		if r.alive == 0 {
			continue
		}
		fs.Completed++
		elected, leading, alive = append(elected, r.elected), append(leading, r.leading), append(alive, r.alive)
		workers = append(workers, r.workers)
		if r.app > 0 {
			app = append(app, r.app)
		}
		if r.OldExitMs > 0 {
			exit = append(exit, time.Duration(r.OldExitMs*float64(time.Millisecond)))
		}
		if r.RestartMs > 0 {
			restart = append(restart, time.Duration(r.RestartMs*float64(time.Millisecond)))
		}
	}
	fs.Elected, fs.Leading, fs.Alive, fs.Restart = benchstat.Summarize(elected), benchstat.Summarize(leading), benchstat.Summarize(alive), benchstat.Summarize(restart)
	fs.Workers = benchstat.Summarize(workers)
	if len(app) > 0 {
		s := benchstat.Summarize(app)
		fs.App = &s
	}
	if len(exit) > 0 {
		s := benchstat.Summarize(exit)
		fs.OldExit = &s
	}
	return fs
}

// pairs calls pair for each result of setup a with the result of setup b
// at the same concurrency (when b committed anything).
func pairs(results []SubmitResult, a, b string, pair func(x, y SubmitResult)) {
	for _, x := range results {
		if x.Setup != a {
			continue
		}
		for _, y := range results {
			if y.Setup == b && y.Concurrency == x.Concurrency && y.PerSecond > 0 {
				pair(x, y)
			}
		}
	}
}

// ratio is x/y to two decimals.
func ratio(x, y float64) float64 { return float64(int(x/y*100+0.5)) / 100 }

// tlsCosts pairs the bolt setups with and without TLS.
func tlsCosts(results []SubmitResult) []TLSCost {
	var out []TLSCost
	pairs(results, setupBolt, setupBoltPlain, func(x, y SubmitResult) {
		out = append(out, TLSCost{Concurrency: x.Concurrency, TLS: x.PerSecond, Plain: y.PerSecond, TLSToPlain: ratio(x.PerSecond, y.PerSecond)})
	})
	return out
}

func ratios(results []SubmitResult) []Ratio {
	var out []Ratio
	pairs(results, setupRaft, setupBolt, func(x, y SubmitResult) {
		out = append(out, Ratio{Concurrency: x.Concurrency, Raft: x.PerSecond, Bolt: y.PerSecond, RaftToBolt: ratio(x.PerSecond, y.PerSecond)})
	})
	return out
}

// print writes the report as tables.
func (r *Report) print(w io.Writer) {
	fmt.Fprintf(w, "\n== berthbench, %s (%.0f s)\n", r.Started.Format(time.RFC3339), r.Seconds)
	m := r.Machine
	fmt.Fprintf(w, "machine: %s, %d cores, %d MiB, kernel %s, work dir on %s; load average %s at the start, %s at the end\n",
		m.CPU, m.Cores, m.MemoryMB, m.Kernel, m.FileSystem, m.LoadStart, m.LoadEnd)
	mod := ""
	if m.Modified {
		mod = " (modified tree)"
	}
	fmt.Fprintf(w, "binaries: %s, revision %s%s; tool %s\n", m.GoBinaries, orDash(m.Revision), mod, m.GoVersion)
	fmt.Fprintf(w, "command: %s\n", strings.Join(r.Command, " "))
	keys := make([]string, 0, len(r.Settings))
	for k := range r.Settings {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Fprintf(w, "  %s: %s\n", k, r.Settings[k])
	}
	for _, c := range r.Clusters {
		fmt.Fprintf(w, "cluster %s:\n", c.Name)
		ids := make([]string, 0, len(c.Masters))
		for id := range c.Masters {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		for _, id := range ids {
			fmt.Fprintf(w, "  master %s: master %s\n", id, strings.Join(c.Masters[id], " "))
		}
		if c.Workers > 0 {
			fmt.Fprintf(w, "  %d workers like: worker %s\n", c.Workers, strings.Join(c.WorkerArgs, " "))
		}
	}

	if len(r.Failovers) > 0 {
		fmt.Fprintln(w, "\nFailover (ms from the signal; nearest-rank percentiles):")
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "scenario\trounds\tok\tmilestone\tp50\tp90\tp99\tmax\tmean\tmin\t")
		for _, f := range r.Failovers {
			type row struct {
				name string
				s    Summary
			}
			rows := []row{{"Raft leader elected", f.Elected}, {"new leader serving", f.Leading}, {"all workers back", f.Workers}}
			if f.App != nil {
				rows = append(rows, row{"app client back", *f.App})
			}
			rows = append(rows, row{"ALIVE, everything back", f.Alive})
			if f.OldExit != nil {
				rows = append(rows, row{"old leader exited", *f.OldExit})
			}
			rows = append(rows, row{"(restart → follower)", f.Restart})
			for i, row := range rows {
				sc, n, ok := "", "", ""
				if i == 0 {
					sc, n, ok = f.Scenario, fmt.Sprint(f.Rounds), fmt.Sprint(f.Completed)
				}
				s := row.s
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%.0f\t%.0f\t%.0f\t%.0f\t%.0f\t%.0f\t\n", sc, n, ok, row.name, s.P50, s.P90, s.P99, s.Max, s.Mean, s.Min)
			}
		}
		tw.Flush()
		for _, f := range r.Failovers {
			for _, p := range f.Problems {
				fmt.Fprintf(w, "  %s PROBLEM %s\n", f.Scenario, p)
			}
			for _, s := range f.Slow {
				fmt.Fprintf(w, "  %s slow round %d (%.0f ms): merged logs in %s\n", f.Scenario, s.Round, s.AliveMs, s.Log)
			}
		}
	}
	if r.Stability != nil {
		fmt.Fprintf(w, "\n%s\n", r.Stability.line())
	}
	if r.App != nil {
		fmt.Fprintf(w, "\napp %s with %d executors (sleep 3600) across all failovers: events %v; executors lost or ended: %d\n",
			r.App.ID, r.App.Executors, r.App.Events, len(r.App.Incidents))
		for _, in := range r.App.Incidents {
			fmt.Fprintf(w, "  INCIDENT %s\n", in)
		}
	}
	if len(r.Submit) > 0 {
		fmt.Fprintln(w, "\nSubmissions (POST /v1/apps, each acknowledged once committed):")
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "setup\tclients\tcount\tcommits/s\tp50 ms\tp90 ms\tp99 ms\tmax ms\tkills/s\tkill p50\tkill p99\terrors\t")
		for _, s := range r.Submit {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%.0f\t%.1f\t%.1f\t%.1f\t%.1f\t%.0f\t%.1f\t%.1f\t%d\t\n", s.Setup, s.Concurrency, s.Count, s.PerSecond,
				s.Latency.P50, s.Latency.P90, s.Latency.P99, s.Latency.Max, s.KillPerSecond, s.KillLatency.P50, s.KillLatency.P99, s.Errors+s.KillErrors)
		}
		tw.Flush()
		for _, s := range r.Submit {
			if s.FirstError != "" {
				fmt.Fprintf(w, "  %s c=%d first error: %s\n", s.Setup, s.Concurrency, s.FirstError)
			}
		}
		var raft, tls [][4]float64
		for _, q := range r.Ratios {
			raft = append(raft, [4]float64{float64(q.Concurrency), q.Raft, q.Bolt, q.RaftToBolt})
		}
		for _, q := range r.TLSCost {
			tls = append(tls, [4]float64{float64(q.Concurrency), q.TLS, q.Plain, q.TLSToPlain})
		}
		writeComparison(w, "raft-3 vs bolt-1:", "clients\traft-3/s\tbolt-1/s\traft/bolt\t", raft)
		writeComparison(w, "bolt-1 with TLS vs without:", "clients\tTLS/s\twithout/s\tTLS/without\t", tls)
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	if r.WorkDir != "" {
		fmt.Fprintf(w, "logs kept in %s\n", r.WorkDir)
	}
	if r.Error != "" {
		fmt.Fprintf(w, "ERROR: %s\n", r.Error)
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func writeJSON(path string, r *Report, stdout io.Writer) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	data = append(data, '\n')
	if path == "-" {
		_, err = stdout.Write(data)
		return err
	}
	return os.WriteFile(path, data, 0o644)
}

// machine describes this machine and the binaries under test.
func machine(masterBin, workDir string) Machine {
	m := Machine{Host: benchstat.DescribeHost()}
	m.LoadStart = loadAverage()
	m.FileSystem = fsType(workDir)
	if b, ok := benchstat.ReadBuild(masterBin); ok {
		m.GoBinaries, m.Revision, m.Modified = b.GoVersion, b.Revision, b.Modified
	}
	return m
}

// loadAverage is the 1, 5 and 15 minute load averages.
func loadAverage() string { return cmp.Or(benchstat.LoadAverage(), "?") }

// fsType names the file system holding dir (the ones likely here).
func fsType(dir string) string {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return "unknown"
	}
	switch uint64(st.Type) {
	case 0xEF53:
		return "ext4"
	case 0x01021994:
		return "tmpfs (fsync is free)"
	case 0x58465342:
		return "xfs"
	case 0x9123683E:
		return "btrfs"
	case 0x794C7630:
		return "overlayfs"
	}
	return fmt.Sprintf("0x%x", uint64(st.Type))
}

// writeComparison writes a side-by-side table (clients, a/s, b/s, a/b),
// if it has rows.
func writeComparison(w io.Writer, title, header string, rows [][4]float64) {
	if len(rows) == 0 {
		return
	}
	fmt.Fprintln(w, "\n"+title)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, header)
	for _, q := range rows {
		fmt.Fprintf(tw, "%.0f\t%.0f\t%.0f\t%.2f\t\n", q[0], q[1], q[2], q[3])
	}
	tw.Flush()
}
