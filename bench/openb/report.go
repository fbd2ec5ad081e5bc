package openb

import (
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
	"time"
)

// Paper is the FGD paper's GPU allocation ratio at 100% arrived (mean of
// seeds 42–51, its simulator's expected results), by task list and by the
// berth name of its policy.
var Paper = map[string]map[string]float64{
	"default":     paperRow(86.3, 90.6, 91.7, 91.8, 92.9, 95.2),
	"cpu050":      paperRow(89.0, 93.0, 93.5, 93.5, 93.6, 95.0),
	"cpu100":      paperRow(87.4, 91.7, 92.4, 92.5, 93.3, 95.2),
	"cpu200":      paperRow(83.0, 87.5, 89.7, 90.0, 92.2, 94.8),
	"gpushare40":  paperRow(84.9, 89.3, 89.8, 89.8, 91.4, 94.0),
	"gpushare60":  paperRow(82.8, 86.8, 86.9, 87.1, 89.1, 91.3),
	"gpushare100": paperRow(78.9, 82.0, 82.2, 82.1, 84.6, 86.6),
	"multigpu20":  paperRow(86.9, 91.8, 93.3, 93.5, 93.7, 95.5),
	"multigpu30":  paperRow(86.6, 93.1, 94.6, 94.7, 94.6, 96.4),
	"multigpu40":  paperRow(85.4, 94.0, 95.3, 95.6, 95.1, 96.9),
	"gpuspec10":   paperRow(86.3, 90.2, 92.0, 92.2, 93.1, 94.7),
	"gpuspec20":   paperRow(85.9, 88.3, 89.1, 89.3, 88.5, 94.7),
}

// paperPolicies are the paper's six policies by their berth names, in the
// order of its table.
var paperPolicies = []string{"random", "dot-product", "gpu-clustering", "gpu-packing", "gpu-best-fit", "fgd"}

func paperRow(figures ...float64) map[string]float64 {
	row := make(map[string]float64, len(figures))
	for i, f := range figures {
		row[paperPolicies[i]] = f
	}
	return row
}

// Summary is one policy's figures over its seeds.
type Summary struct {
	Policy                string
	At100, At130          Stats
	PerDecision           time.Duration
	Placed, Failed, Seeds int
}

// Stats are a figure's mean, standard deviation and range over seeds.
type Stats struct{ Mean, SD, Min, Max float64 }

func statsOf(xs []float64) Stats {
	s := Stats{Min: math.Inf(1), Max: math.Inf(-1)}
	for _, x := range xs {
		s.Mean += x
		s.Min, s.Max = math.Min(s.Min, x), math.Max(s.Max, x)
	}
	s.Mean /= float64(len(xs))
	for _, x := range xs {
		s.SD += (x - s.Mean) * (x - s.Mean)
	}
	if len(xs) > 1 {
		s.SD = math.Sqrt(s.SD / float64(len(xs)-1))
	}
	return s
}

// Summarize groups the runs by policy, in the order of policies.
func Summarize(policies []string, runs []*Run) []Summary {
	var out []Summary
	for _, p := range policies {
		var at100, at130 []float64
		s := Summary{Policy: p}
		var total time.Duration
		for _, r := range runs {
			if r.Policy != p {
				continue
			}
			at100, at130 = append(at100, r.At(100)), append(at130, r.Final)
			total += r.Decisions
			s.Placed += r.Placed
			s.Failed += r.Failed
			s.Seeds++
		}
		if s.Seeds == 0 {
			continue
		}
		s.At100, s.At130 = statsOf(at100), statsOf(at130)
		if n := s.Placed + s.Failed; n > 0 {
			s.PerDecision = total / time.Duration(n)
		}
		out = append(out, s)
	}
	return out
}

// WriteTable prints the summary, with the paper's figure beside each of
// its policies.
func WriteTable(w io.Writer, list string, policies []string, runs []*Run) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "policy\tat 100% arrived\tsd\trange\tpaper\tat 130% (all)\tsd\tfailed tasks/seed\tµs/decision\t")
	for _, s := range Summarize(policies, runs) {
		paper := "-"
		if v, ok := Paper[list][s.Policy]; ok {
			paper = fmt.Sprintf("%.1f", v)
		}
		fmt.Fprintf(tw, "%s\t%.2f\t%.2f\t%.1f–%.1f\t%s\t%.2f\t%.2f\t%d\t%.1f\t\n", s.Policy,
			s.At100.Mean, s.At100.SD, s.At100.Min, s.At100.Max, paper, s.At130.Mean, s.At130.SD,
			s.Failed/s.Seeds, float64(s.PerDecision.Nanoseconds())/1000)
	}
	return tw.Flush()
}

// WriteCSV writes policy,seed,arrived_pct,gpu_alloc_pct for every 1% of
// arrived demand of every run.
func WriteCSV(w io.Writer, runs []*Run) error {
	var b strings.Builder
	b.WriteString("policy,seed,arrived_pct,gpu_alloc_pct\n")
	for _, r := range runs {
		for pct, v := range r.Curve {
			fmt.Fprintf(&b, "%s,%d,%d,%.3f\n", r.Policy, r.Seed, pct, v)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
