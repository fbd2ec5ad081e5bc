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
// seeds 42–51), by task list and by the berth name of its policy.
var Paper = map[string]map[string]float64{
	"default":    {"random": 86.3, "dot-product": 90.6, "gpu-clustering": 91.7, "gpu-packing": 91.8, "gpu-best-fit": 92.9, "fgd": 95.2},
	"cpu050":     {"random": 89.0, "dot-product": 93.0, "gpu-clustering": 93.5, "gpu-packing": 93.5, "gpu-best-fit": 93.6, "fgd": 95.0},
	"gpushare40": {"random": 84.9, "dot-product": 89.3, "gpu-clustering": 89.8, "gpu-packing": 89.8, "gpu-best-fit": 91.4, "fgd": 94.0},
	"multigpu20": {"random": 86.9, "dot-product": 91.8, "gpu-clustering": 93.3, "gpu-packing": 93.5, "gpu-best-fit": 93.7, "fgd": 95.5},
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
