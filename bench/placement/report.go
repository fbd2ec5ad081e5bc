package placement

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
)

// writeTable prints one row per result.
func writeTable(w io.Writer, results []*Result, refUnit int) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "policy\texec/min\tsmall<%dc\tstranded\tstranded%%\tblast\tblast p95\twaiting\tutil%%\texecutors\tscore\tµs/round\tp99 µs\t\n", refUnit)
	scores := balanceScores(results)
	for i, r := range results {
		m := r.Metrics
		fmt.Fprintf(tw, "%s\t%.2f\t%.1f%%\t%.1f\t%.2f%%\t%.2f\t%.2f\t%.0f\t%.1f%%\t%.0f\t%.2f\t%.1f\t%.1f\t\n",
			r.Name, m.ExecRatio, 100*m.SmallShare, m.StrandedCores, m.StrandedPct,
			m.BlastMean, m.BlastP95, m.WaitingCores, m.UtilPct, m.Executors,
			scores[i], r.Timing.MeanUS, r.Timing.P99US)
	}
	return tw.Flush()
}

// legend explains the table columns in one line each.
func legend(refUnit int) string {
	return strings.Join([]string{
		"exec/min   executors per running app / fewest possible for its cores (1 = ideal), mean over apps and rounds",
		fmt.Sprintf("small<%dc   share of executors (apps without CoresPerExecutor, MaxCores >= %d) with fewer than %d cores", refUnit, refUnit, refUnit),
		"stranded   free cores on alive workers that no waiting app can use, mean per round (and % of alive cores)",
		fmt.Sprintf("blast      largest share of one app's cores on one worker (apps holding >= %d cores): mean, p95", 2*refUnit),
		"waiting    cores asked for but not held, mean per round;  util% cores held / alive cores",
		"score      geometric mean of exec/min, small, stranded%, blast, waiting, each divided by the best row (1.00 = best everywhere)",
		"µs/round   wall time of StartExecutorsOnWorkers per round (mean, p99) - the only non-deterministic columns",
	}, "\n")
}

var csvHeader = func() []string {
	h := []string{"trace", "seed", "policy", "unit", "ref_unit", "rounds", "exec_ratio", "small_share",
		"stranded_cores", "stranded_pct", "blast_mean", "blast_p95", "waiting_cores", "util_pct",
		"executors", "balance_score", "round_us_mean", "round_us_p99"}
	for _, b := range sizeBuckets {
		h = append(h, b.Key)
	}
	return h
}()

// writeCSV writes the table's figures, one row per result.
func writeCSV(w io.Writer, trace, seed string, refUnit int, results []*Result) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(csvHeader); err != nil {
		return err
	}
	f := func(x float64) string { return strconv.FormatFloat(x, 'f', 4, 64) }
	scores := balanceScores(results)
	for i, r := range results {
		m := r.Metrics
		row := []string{trace, seed, r.Policy, strconv.Itoa(r.Unit), strconv.Itoa(refUnit), strconv.Itoa(m.Rounds),
			f(m.ExecRatio), f(m.SmallShare), f(m.StrandedCores), f(m.StrandedPct), f(m.BlastMean), f(m.BlastP95),
			f(m.WaitingCores), f(m.UtilPct), f(m.Executors), f(scores[i]), f(r.Timing.MeanUS), f(r.Timing.P99US)}
		for _, s := range m.SizeShare {
			row = append(row, f(s))
		}
		if err := cw.Write(row); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// writeSnapshots prints, for each labelled phase, every app's executors under
// every policy.
func writeSnapshots(w io.Writer, results []*Result) error {
	if len(results) == 0 || len(results[0].Snapshots) == 0 {
		return nil
	}
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', 0)
	for i, snap := range results[0].Snapshots {
		fmt.Fprintf(tw, "%s\n", snap.Label)
		for _, r := range results {
			if i >= len(r.Snapshots) {
				continue
			}
			for _, a := range r.Snapshots[i].Apps {
				lost := ""
				if a.Lost != "" {
					lost = "lost " + a.Lost
				}
				fmt.Fprintf(tw, "  %s\t%s\t%s\t%d/%d cores\t%s\n", r.Name, a.ID, a.Executors, a.Held, a.Wanted, lost)
			}
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	// The empty last column leaves padding behind; drop it.
	for _, line := range strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n") {
		if _, err := fmt.Fprintln(w, strings.TrimRight(line, " ")); err != nil {
			return err
		}
	}
	return nil
}
