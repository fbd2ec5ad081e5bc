package sparkcmp

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/berth-cluster/berth/bench/internal/benchstat"
)

// report is everything the run prints: where and what it ran, how each
// daemon was started, then the results and the goals.
type report struct {
	*results
	started, ended     time.Time
	command            []string
	host               benchstat.Host
	loadStart, loadEnd string
	berthVersion       string // git describe, and the binaries' build
	sparkVersion       string // spark-submit --version
	javaVersion        string
	workDir            string
	daemons            map[string][]string // system → its daemons' command lines
	launches           map[string][]string // system → the JVM commands spark-class ran (SPARK_PRINT_LAUNCH_COMMAND)
	files              []settingsFile
	submits            map[string]string // system → one spark-submit command line
	timeouts           []string          // markdown rows: what each system waits for, and how long
	goals              []goal
}

type settingsFile struct{ path, content string }

// systemNames are the columns, berth's first: every ratio is berth/Spark.
var systemNames = []string{"berth", "Spark"}

func (r *report) print(w io.Writer) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format+"\n", args...) }
	p("# berth against Spark standalone, side by side (berthbench spark-vs-standalone)")
	p("")
	p("- Run: %s to %s (%s); load average at the start %s, at the end %s.", r.started.Format(time.RFC3339), r.ended.Format(time.RFC3339),
		r.ended.Sub(r.started).Round(time.Second), r.loadStart, r.loadEnd)
	p("- Machine: %s, %d CPUs, %d MiB of memory, Linux %s.", r.host.CPU, r.host.Cores, r.host.MemoryMB, r.host.Kernel)
	p("- berth: %s. Spark: %s. Java: %s. berthbench: %s.", r.berthVersion, r.sparkVersion, r.javaVersion, r.host.GoVersion)
	p("- Command: `%s`", strings.Join(r.command, " "))
	p("- Every process on 127.0.0.100-140, ports 18000-18999 (drivers' and executors' own ports: the kernel's); work directory %s.", r.workDir)
	p("- Rounds alternate: berth, then Spark, in every round of every measure. Percentiles are nearest-rank over the rounds (a value seen); ratios are berth's p50 over Spark's.")
	p("")
	r.printDaemons(p)
	for _, section := range r.sections {
		r.printSection(p, section)
	}
	r.printGoals(p)
}

func (r *report) printDaemons(p func(string, ...any)) {
	p("## The two clusters")
	p("")
	p("The same number of workers with the same cores and memory for both; every app is the same jar with the same settings but for the master URL. " +
		"berth runs as its docs set it up, over TLS (Raft runs only over mutual TLS; the driver checks the masters' certificates) with an operator secret; " +
		"Spark standalone with its defaults: no authentication (`spark.authenticate` off), no TLS.")
	p("")
	p("| what waits | berth | Spark standalone |")
	p("| --- | --- | --- |")
	for _, row := range r.timeouts {
		p("%s", row)
	}
	p("")
	for _, sys := range systemNames {
		p("%s's daemons, as started (each its own environment, nothing inherited but PATH, HOME and TMPDIR):", sys)
		p("")
		p("```")
		for _, l := range r.daemons[sys] {
			p("%s", l)
		}
		p("```")
		if l := r.launches[sys]; len(l) > 0 {
			p("")
			p("The JVMs spark-class started (its `Spark Command:` lines):")
			p("")
			p("```")
			for _, c := range l {
				p("%s", c)
			}
			p("```")
		}
		p("")
		p("One of its spark-submits:")
		p("")
		p("```")
		p("%s", r.submits[sys])
		p("```")
		p("")
	}
	for _, f := range r.files {
		p("`%s`:", f.path)
		p("")
		p("```")
		p("%s", strings.TrimRight(f.content, "\n"))
		p("```")
		p("")
	}
}

func (r *report) printSection(p func(string, ...any), section string) {
	p("## %s", section)
	p("")
	for _, l := range r.intro[section] {
		p("%s", l)
	}
	if len(r.intro[section]) > 0 {
		p("")
	}
	if figs := r.sectionFigures(section); len(figs) > 0 {
		p("| figure | berth p50 | berth p90 | berth max | Spark p50 | Spark p90 | Spark max | berth/Spark | rounds |")
		p("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
		for _, f := range figs {
			b, s := summarize(f.values["berth"]), summarize(f.values["Spark"])
			p("| %s | %s | %s | %s | %s | %s | %s | %s | %d, %d |", f.name,
				num(b.p50, f.digits, b.n), num(b.p90, f.digits, b.n), num(b.max, f.digits, b.n),
				num(s.p50, f.digits, s.n), num(s.p90, f.digits, s.n), num(s.max, f.digits, s.n),
				ratio(b, s), b.n, s.n)
		}
		p("")
		p("Each round's values, in the order measured:")
		p("")
		for _, f := range figs {
			p("- %s: berth %s; Spark %s", f.name, values(f.values["berth"], f.digits), values(f.values["Spark"], f.digits))
		}
		p("")
	}
	for _, l := range r.tables[section] {
		p("%s", l)
	}
	if len(r.tables[section]) > 0 {
		p("")
	}
	for _, n := range r.notes[section] {
		p("- **problem:** %s", n)
	}
	if len(r.notes[section]) > 0 {
		p("")
	}
}

func num(v float64, digits, n int) string {
	if n == 0 {
		return "–"
	}
	return strconv.FormatFloat(v, 'f', digits, 64)
}

func values(vs []float64, digits int) string {
	if len(vs) == 0 {
		return "none"
	}
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = strconv.FormatFloat(v, 'f', digits, 64)
	}
	return strings.Join(s, ", ")
}

// ratio is berth's p50 over Spark's, to three significant digits.
func ratio(b, s stats) string {
	if b.n == 0 || s.n == 0 || s.p50 == 0 {
		return "–"
	}
	return strconv.FormatFloat(b.p50/s.p50, 'g', 3, 64)
}

// goal is one of issue 32's goals, judged on this run's figures.
type goal struct {
	what         string
	berth, spark string
	ratio        string
	met          string // yes, no, or why it cannot be said
}

func (r *report) printGoals(p func(string, ...any)) {
	if len(r.goals) == 0 {
		return
	}
	p("## The goals, on this run (berth's figure first)")
	p("")
	p("| goal | berth | Spark | berth/Spark | met |")
	p("| --- | ---: | ---: | ---: | --- |")
	for _, g := range r.goals {
		p("| %s | %s | %s | %s | %s |", g.what, g.berth, g.spark, g.ratio, g.met)
	}
	p("")
}

// judge makes a goal of a p50 comparison: met when berth/Spark passes ok.
func (r *report) judge(what, section, name string, ok func(ratio float64) bool) goal {
	b, okB := r.lookup(section, name, "berth")
	s, okS := r.lookup(section, name, "Spark")
	g := goal{what: what, berth: "–", spark: "–", ratio: "–", met: "not measured"}
	if okB {
		g.berth = strconv.FormatFloat(b.p50, 'f', 2, 64)
	}
	if okS {
		g.spark = strconv.FormatFloat(s.p50, 'f', 2, 64)
	}
	if okB && okS && s.p50 != 0 {
		x := b.p50 / s.p50
		g.ratio = strconv.FormatFloat(x, 'g', 3, 64)
		g.met = yesNo(ok(x) && !math.IsNaN(x))
	}
	return g
}

// evaluateGoals judges issue 32's goals on the figures measured.
func (r *report) evaluateGoals(cfg *config) {
	if cfg.has(measureFailover) && slices.Contains(cfg.failoverScenarios, scenarioKill) {
		r.goals = append(r.goals,
			r.judge("kill -9 of the active master: a new app's first executor ≤ 1/20 of Spark+ZooKeeper's (s after the signal, p50)",
				failoverSection(scenarioKill), figNewAppExec, func(x float64) bool { return x <= 0.05 }),
			r.judge("the same, less an undisturbed app's first executor (the JVMs' own start, alike on both) (s, p50)",
				failoverSection(scenarioKill), figNewAppExcess, func(x float64) bool { return x <= 0.05 }))
	}
	if cfg.has(measureStartup) {
		for _, n := range cfg.startupExecutors {
			r.goals = append(r.goals, r.judge(fmt.Sprintf("N = %d executors registered ≤ Spark's (s, p50)", n),
				startupSection(n), figNRegistered, func(x float64) bool { return x <= 1 }))
		}
	}
	if cfg.has(measureWorkerLoss) {
		for _, mode := range cfg.lossModes {
			what := map[string]string{lossKill: "kill -9", lossFreeze: "frozen, as a dead machine"}[mode]
			r.goals = append(r.goals, r.judge(fmt.Sprintf("executors back after a worker's loss (%s) ≤ Spark's (s, p50)", what),
				lossSection(cfg, mode), figLossBack, func(x float64) bool { return x <= 1 }))
		}
	}
	if cfg.has(measureFragmentation) && slices.Contains(cfg.fragmentationCases, fragUnset) {
		r.goals = append(r.goals, r.unitGoal(cfg))
	}
	if cfg.has(measureBurst) {
		r.goals = append(r.goals,
			r.judge("burst: apps finished per second ≥ Spark's (p50)", burstSection(cfg), figBurstRate, func(x float64) bool { return x >= 1 }),
			r.judge("burst: the active master's peak RSS < Spark's (MB, p50)", burstSection(cfg), figBurstPeak, func(x float64) bool { return x < 1 }))
	}
}

// unitGoal: no replacement executor of berth's smaller than the unit, for
// the app that does not fix its executors' size.
func (r *report) unitGoal(cfg *config) goal {
	name := fragFigure(fragCase{label: unsetLabel}, figFragSmallest)
	g := goal{what: fmt.Sprintf("no berth replacement executor smaller than the unit (%d cores; `spark.executor.cores` unset)", cfg.minCoreUnit),
		berth: "–", spark: "–", ratio: "–", met: "not measured"}
	var smallest [2]float64
	for i, sys := range systemNames {
		f := r.figureValues(fragSection, name, sys)
		if len(f) == 0 {
			continue
		}
		smallest[i] = slices.Min(f)
		s := "smallest " + strconv.FormatFloat(smallest[i], 'f', 0, 64)
		if i == 0 {
			g.berth = s
		} else {
			g.spark = s
		}
	}
	if g.berth != "–" {
		g.met = yesNo(smallest[0] >= float64(cfg.minCoreUnit))
	}
	return g
}

// figureValues are every round's values of a figure for a system.
func (r *results) figureValues(section, name, system string) []float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, f := range r.figures {
		if f.section == section && f.name == name {
			return slices.Clone(f.values[system])
		}
	}
	return nil
}

func yesNo(met bool) string {
	if met {
		return "yes"
	}
	return "**no**"
}
