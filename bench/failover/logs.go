package failover

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// logLine is one line of a daemon's log with the time it was written.
type logLine struct {
	at   time.Time
	file string
	text string
}

// startLinePrefix begins the line this tool writes to a daemon's log before
// it starts it: "# berthbench: NAME started TIME: PATH ARGS".
const startLinePrefix = "# berthbench: "

// lineTime reads the time of a line written by berth's text logger
// ("time=2006-01-02T15:04:05.000Z07:00 level=...") or by this tool (see
// startLinePrefix).
func lineTime(line string) (time.Time, bool) {
	var field string
	switch {
	case strings.HasPrefix(line, "time="):
		field, _, _ = strings.Cut(strings.TrimPrefix(line, "time="), " ")
	case strings.HasPrefix(line, startLinePrefix):
		_, rest, ok := strings.Cut(line, " started ")
		if !ok {
			return time.Time{}, false
		}
		field, _, _ = strings.Cut(rest, ": ")
	default:
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, field)
	return t, err == nil
}

// readWindow returns the lines of path written between from and to. A line
// without a time (a stack trace) goes with the line before it.
func readWindow(path string, from, to time.Time) ([]logLine, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	name := filepath.Base(path)
	var out []logLine
	var last time.Time
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if t, ok := lineTime(sc.Text()); ok {
			last = t
		}
		if last.IsZero() || last.Before(from) || last.After(to) {
			continue
		}
		out = append(out, logLine{at: last, file: name, text: sc.Text()})
	}
	return out, sc.Err()
}

// mergeLogs writes to out the lines of files written between from and to,
// in time order, each prefixed with the file it came from.
func mergeLogs(files []string, from, to time.Time, out string) error {
	var all []logLine
	for _, p := range files {
		lines, err := readWindow(p, from, to)
		if err != nil {
			return err
		}
		all = append(all, lines...)
	}
	slices.SortStableFunc(all, func(a, b logLine) int { return a.at.Compare(b.at) })
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	fmt.Fprintf(w, "# lines of %d logs between %s and %s\n", len(files), from.Format(time.RFC3339Nano), to.Format(time.RFC3339Nano))
	for _, l := range all {
		fmt.Fprintf(w, "%-22s %s\n", l.file, l.text)
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// keepSlowRounds merges the logs of the cluster around each slow round into
// <dir>/slow/ and returns them.
func keepSlowRounds(cl *cluster, rounds []Round, threshold time.Duration) []SlowRound {
	var done []time.Duration
	var idx []int
	for i, r := range rounds {
		if r.alive > 0 {
			done = append(done, r.alive)
			idx = append(idx, i)
		}
	}
	files, _ := filepath.Glob(filepath.Join(cl.root, "logs", cl.name+"-*.log"))
	var out []SlowRound
	for _, i := range slowRounds(done, threshold) {
		r := rounds[idx[i]]
		path := filepath.Join(cl.root, "slow", fmt.Sprintf("%s-round-%02d.log", r.Scenario, r.N))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			continue
		}
		if err := mergeLogs(files, r.Start.Add(-2*time.Second), r.Start.Add(r.alive+2*time.Second), path); err != nil {
			continue
		}
		out = append(out, SlowRound{Round: r.N, AliveMs: r.AliveMs, Log: path})
	}
	return out
}
