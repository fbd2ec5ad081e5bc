// Package placement is berthbench's placement measure: it replays cluster
// traces through scheduling rounds under each placement policy and reports
// how the executors come out: how many per app against the fewest possible,
// how many are smaller than a reference unit, the cores stranded, the blast
// radius of one worker loss, the demand left waiting and the time per round.
//
//	berthbench placement                  # the synthetic storm trace, all policies
//	berthbench placement --trace seed     # the two-worker cluster of the seed issue
package placement

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/berth-cluster/berth/client"
)

const description = `Replays a trace round by round. Each round the policy gets the ALIVE workers
with their free cores and memory and the waiting apps in FIFO order
(CoresLeft = max cores - cores held, no executor limit), and
placement.StartExecutorsOnWorkers decides the launches. A failed worker takes
its executors with it and their cores return to the apps' demand; a master loss
drops every executor and re-places all demand. Apart from the timing columns,
everything is deterministic for a given --seed.

Traces:
  storm  (default) --workers workers of --worker-cores cores and
         --worker-memory-gb GB join in round 0. --apps apps arrive over --rounds
         rounds (a tenth in round 0), ask for 2-256 cores (half fix
         CoresPerExecutor at 2, 4 or 8, half do not) and finish --min-lifetime
         to --max-lifetime rounds after they arrive. Every --storm-every rounds
         --storm-fraction of the workers fail at once; each comes back empty
         --storm-downtime/2 to 3*--storm-downtime/2 rounds later.
  seed   the seed issue's cluster: w1 (32 cores) and w2 (40 cores) with 24 cores
         and 10 GB free each; an app of 12 cores with 10 GB executors; then w1
         is lost, comes back, and the master is lost. Prints each phase's
         executors per policy. The storm flags do not apply.

Metrics (sampled after every round):
  exec/min    for each running app, executors held / fewest possible for the
              cores it holds (cores/CoresPerExecutor, else ceil(cores / largest
              worker)); mean over apps, averaged over rounds. 1 is ideal.
  small<Nc    among executors of apps without CoresPerExecutor (and MaxCores of
              at least --ref-unit), the share with fewer than --ref-unit cores.
              Every policy is judged against the same reference unit.
  stranded    free cores on ALIVE workers on which no waiting app can start an
              executor (fewer free cores than its smallest executor -
              CoresPerExecutor, or min(policy unit, cores left) - or too little
              memory); 0 when no app waits. Mean per round, and % of alive cores.
  blast       for each running app holding at least 2 x --ref-unit cores, the
              largest share of its cores on one worker (what one worker loss
              takes); mean over apps and rounds, and p95 of all samples.
              Smaller apps are left out: one executor suits them under any
              policy, and they would pin the p95 at 1.
  waiting     cores asked for but not held, mean per round (a policy cannot
              look good by starving apps); util% = cores held / alive cores.
  executors   executors alive, mean per round.
  µs/round    wall time of the StartExecutorsOnWorkers call per round: mean, p99.

Outputs: the table on stdout, the same figures (and executor size shares) as
CSV, and an SVG chart of executor sizes per policy. Pass an empty --csv or --svg
to skip that file.`

// env names the environment variables of a flag: berthbench's, then the
// one of placebench, the command this measure was before.
func env(name string) []string {
	return []string{"BERTHBENCH_PLACEMENT_" + name, "BERTH_PLACEBENCH_" + name}
}

// Commands is the placement subcommand of berthbench.
func Commands(stdout io.Writer) []*cli.Command {
	d := DefaultStorm()
	return []*cli.Command{{
		Name:        "placement",
		Usage:       "replay cluster traces through placement policies and compare them",
		UsageText:   "berthbench placement [--trace storm|seed] [options]",
		Description: description,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "trace", Value: "storm", Usage: "trace to replay: storm or seed", EnvVars: env("TRACE")},
			&cli.Uint64Flag{Name: "seed", Value: d.Seed, Usage: "random seed of the storm trace", EnvVars: env("SEED")},
			&cli.IntFlag{Name: "workers", Value: d.Workers, Usage: "workers in the storm trace", EnvVars: env("WORKERS")},
			&cli.IntFlag{Name: "worker-cores", Value: d.WorkerCores, Usage: "cores per worker", EnvVars: env("WORKER_CORES")},
			&cli.IntFlag{Name: "worker-memory-gb", Value: d.WorkerMemoryMB / gb, Usage: "memory per worker in GB", EnvVars: env("WORKER_MEMORY_GB")},
			&cli.IntFlag{Name: "rounds", Value: d.Rounds, Usage: "scheduling rounds", EnvVars: env("ROUNDS")},
			&cli.IntFlag{Name: "apps", Value: d.Apps, Usage: "apps arriving over the rounds", EnvVars: env("APPS")},
			&cli.IntFlag{Name: "min-lifetime", Value: d.MinLifetime, Usage: "fewest rounds an app runs after it arrives", EnvVars: env("MIN_LIFETIME")},
			&cli.IntFlag{Name: "max-lifetime", Value: d.MaxLifetime, Usage: "most rounds an app runs after it arrives", EnvVars: env("MAX_LIFETIME")},
			&cli.IntFlag{Name: "storm-every", Value: d.StormEvery, Usage: "rounds between worker storms (0: none)", EnvVars: env("STORM_EVERY")},
			&cli.Float64Flag{Name: "storm-fraction", Value: d.StormFraction, Usage: "share of the workers failing in one storm", EnvVars: env("STORM_FRACTION")},
			&cli.IntFlag{Name: "storm-downtime", Value: d.StormDowntime, Usage: "mean rounds a failed worker stays down", EnvVars: env("STORM_DOWNTIME")},
			&cli.IntFlag{Name: "master-loss-every", Value: d.MasterLossEvery, Usage: "rounds between master losses (0: none)", EnvVars: env("MASTER_LOSS_EVERY")},
			&cli.StringFlag{Name: "policies", Value: "spread,pack,bestfit@4", Usage: "comma-separated policies; NAME runs at every --units, NAME@U at unit U only", EnvVars: env("POLICIES")},
			&cli.StringFlag{Name: "units", Value: "1,2,4,8", Usage: "comma-separated minimum core units", EnvVars: env("UNITS")},
			&cli.IntFlag{Name: "ref-unit", Value: 4, Usage: "reference unit of the small-executor share", EnvVars: env("REF_UNIT")},
			&cli.StringFlag{Name: "csv", Value: "out/placement-<trace>.csv", Usage: "CSV output path (empty: none)", EnvVars: env("CSV")},
			&cli.StringFlag{Name: "svg", Value: "out/placement-<trace>.svg", Usage: "SVG chart path (empty: none)", EnvVars: env("SVG")},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return fmt.Errorf("unexpected arguments %q", c.Args().Slice())
			}
			cfg := DefaultStorm()
			cfg.Seed = c.Uint64("seed")
			cfg.Workers = c.Int("workers")
			cfg.WorkerCores = c.Int("worker-cores")
			cfg.WorkerMemoryMB = c.Int("worker-memory-gb") * gb
			cfg.Rounds = c.Int("rounds")
			cfg.Apps = c.Int("apps")
			cfg.MinLifetime = c.Int("min-lifetime")
			cfg.MaxLifetime = c.Int("max-lifetime")
			cfg.StormEvery = c.Int("storm-every")
			cfg.StormFraction = c.Float64("storm-fraction")
			cfg.StormDowntime = c.Int("storm-downtime")
			cfg.MasterLossEvery = c.Int("master-loss-every")
			return run(stdout, options{
				trace:    c.String("trace"),
				storm:    cfg,
				policies: c.String("policies"),
				units:    c.String("units"),
				refUnit:  c.Int("ref-unit"),
				csvPath:  c.String("csv"),
				svgPath:  c.String("svg"),
			})
		},
	}}
}

type options struct {
	trace            string
	storm            StormConfig
	policies, units  string
	refUnit          int
	csvPath, svgPath string
}

// runConfigs expands --policies and --units into one RunConfig per row.
// Both are comma-separated, split as berth's own lists of masters are
// (blanks dropped).
func runConfigs(policies, units string, refUnit int) ([]RunConfig, error) {
	var us []int
	for _, f := range client.SplitMasters(units) {
		u, ok := parseUnit(f)
		if !ok {
			return nil, fmt.Errorf("bad unit %q in --units (want positive integers)", f)
		}
		us = append(us, u)
	}
	var out []RunConfig
	for _, f := range client.SplitMasters(policies) {
		name, unit, fixed := strings.Cut(f, "@")
		if !fixed {
			if len(us) == 0 {
				return nil, fmt.Errorf("policy %q needs --units", name)
			}
			for _, u := range us {
				out = append(out, RunConfig{Policy: name, Unit: u, RefUnit: refUnit})
			}
			continue
		}
		u, ok := parseUnit(unit)
		if !ok {
			return nil, fmt.Errorf("bad unit in policy %q (want NAME@UNIT)", f)
		}
		out = append(out, RunConfig{Policy: name, Unit: u, RefUnit: refUnit})
	}
	if len(out) == 0 {
		return nil, errors.New("no policies to run")
	}
	return out, nil
}

// parseUnit reads a minimum core unit: a positive integer.
func parseUnit(s string) (int, bool) {
	u, err := strconv.Atoi(s)
	return u, err == nil && u >= 1
}

// buildTrace returns the named trace.
func buildTrace(name string, storm StormConfig) (*Trace, error) {
	switch name {
	case "storm":
		return StormTrace(storm)
	case "seed":
		return SeedTrace(), nil
	}
	return nil, fmt.Errorf("unknown trace %q (known: storm, seed)", name)
}

// runAll replays tr under every configuration, in order.
func runAll(tr *Trace, rcs []RunConfig) ([]*Result, error) {
	results := make([]*Result, 0, len(rcs))
	for _, rc := range rcs {
		res, err := Run(tr, rc)
		if err != nil {
			return nil, err
		}
		results = append(results, res)
	}
	return results, nil
}

func run(stdout io.Writer, o options) error {
	if o.refUnit < 1 {
		return fmt.Errorf("--ref-unit must be at least 1, got %d", o.refUnit)
	}
	rcs, err := runConfigs(o.policies, o.units, o.refUnit)
	if err != nil {
		return err
	}
	tr, err := buildTrace(o.trace, o.storm)
	if err != nil {
		return err
	}
	start := time.Now()
	results, err := runAll(tr, rcs)
	if err != nil {
		return err
	}
	elapsed := time.Since(start)

	fmt.Fprintf(stdout, "trace %s\n\n", tr.Description)
	if err := writeTable(stdout, results, o.refUnit); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "\n%s\n", legend(o.refUnit))
	if tr.Name == "seed" {
		fmt.Fprintf(stdout, "\nexecutors per phase (worker:cores, in launch order):\n")
		if err := writeSnapshots(stdout, results); err != nil {
			return err
		}
	}

	seed := ""
	if tr.Name == "storm" {
		seed = strconv.FormatUint(o.storm.Seed, 10)
	}
	csvPath := strings.ReplaceAll(o.csvPath, "<trace>", tr.Name)
	svgPath := strings.ReplaceAll(o.svgPath, "<trace>", tr.Name)
	fmt.Fprintln(stdout)
	if csvPath != "" {
		if err := writeFile(csvPath, func(w io.Writer) error { return writeCSV(w, tr.Name, seed, o.refUnit, results) }); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "wrote %s\n", csvPath)
	}
	if svgPath != "" {
		title := fmt.Sprintf("Executor sizes per placement policy - trace %s", tr.Name)
		if seed != "" {
			title += ", seed " + seed
		}
		subtitle := fmt.Sprintf("%s, %s, %s; red = small executors (fragmentation), blue = large",
			plural(len(tr.Workers), "worker"), plural(len(tr.Apps), "app"), plural(len(tr.Rounds), "round"))
		if err := writeFile(svgPath, func(w io.Writer) error { return writeSVG(w, title, subtitle, results) }); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "wrote %s\n", svgPath)
	}
	fmt.Fprintf(stdout, "replayed %d rounds x %d policies in %.2fs\n", len(tr.Rounds), len(results), elapsed.Seconds())
	return nil
}

// writeFile writes path through fn, creating its directory.
func writeFile(path string, fn func(io.Writer) error) (err error) {
	if dir := filepath.Dir(path); dir != "." {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}()
	return fn(f)
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
