package openb

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/urfave/cli/v2"

	"github.com/berth-cluster/berth/placement"
)

const description = `Replays the Alibaba GPU cluster trace (openb) with the method of the FGD paper
(Weng et al., USENIX ATC 2023) and its simulator: for each seed the task list
is sorted by name, shuffled with the seed, and tuned to 130% of the cluster's
GPU capacity (random tasks removed, or random tasks of the list appended);
the tasks then arrive one by one and each is placed on arrival by the policy
(placement.PlaceOne over every node, with Options{Seed: seed, MinCoreUnit: 1,
Workload: the task list}) or fails; nothing departs. CPU is in milli-cores,
GPUs are the resource "gpu" (a task's share of one GPU, or whole GPUs). A
node's GPU model is its label gpu-model, and a task's gpu_spec (any of the
models named) a constraint on it, for GPU tasks (as the simulator's filter);
fgd and frag-fit also get the task list with its memory and constraints
(gpushare.WorkloadSetter). fgd and frag-fit decide through gpushare.Fleet,
which makes PlaceOne's decisions without scoring every node each time
(--exhaustive: through PlaceOne).

The measure is the GPU allocation ratio: GPU thousandths allocated / the
cluster's, as the arrived demand (GPU thousandths asked by the tasks arrived
so far, placed or not) grows from 0 to 130% of the capacity.

Prints per policy the ratio at 100% and at 130% arrived (every task): mean,
standard deviation and range over the seeds, and the time per placement
decision; beside them the paper's figure where the task list has a row in
its table. Writes the CSV rows policy,seed,arrived_pct,gpu_alloc_pct for
every 1% of arrived demand (--csv) and the mean curves as an SVG (--svg).

The data: bench/openb/data (see its README for the source and terms).`

// Command is placebench's openb subcommand.
func Command(stdout io.Writer) *cli.Command {
	return &cli.Command{
		Name:        "openb",
		Usage:       "replay the Alibaba GPU trace (openb) as the FGD paper does: GPU allocation ratio per policy",
		Description: description,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "nodes", Value: "bench/openb/data/openb_node_list_gpu_node.csv", Usage: "node list `FILE` (sn, cpu_milli, memory_mib, gpu, model)"},
			&cli.StringFlag{Name: "pods", Value: "bench/openb/data/openb_pod_list_default.csv", Usage: "task list `FILE` (name, cpu_milli, memory_mib, num_gpu, gpu_milli)"},
			&cli.StringFlag{Name: "policy", Value: "all", Usage: "`NAME[,NAME...]` of registered policies, or all"},
			&cli.StringFlag{Name: "seeds", Value: "42-51", Usage: "seeds: `A-B` or a comma-separated list"},
			&cli.Float64Flag{Name: "tune", Value: TuneRatio, Usage: "GPU demand as a multiple of the capacity (the paper's 1.3)"},
			&cli.StringFlag{Name: "csv", Value: "openb.csv", Usage: "CSV `FILE` of policy,seed,arrived_pct,gpu_alloc_pct (empty: none)"},
			&cli.StringFlag{Name: "svg", Value: "openb.svg", Usage: "SVG `FILE` of the mean curves (empty: none)"},
			&cli.IntFlag{Name: "parallel", Value: runtime.NumCPU(), Usage: "replays run at once"},
			&cli.IntFlag{Name: "scale", Usage: "replay on a cluster of `N` nodes built from the node list's mix (node i is node i mod the list's length, renamed), the tasks tuned to its capacity (0: the list as it is)"},
			&cli.BoolFlag{Name: "exhaustive", Usage: "decide every task with placement.PlaceOne over every node, also for fgd and frag-fit (by default they decide through gpushare.Fleet: the same decisions, near their floor)"},
		},
		Action: func(c *cli.Context) error { return run(c, stdout) },
	}
}

// inputs is what the flags name.
type inputs struct {
	seeds    []uint64
	policies []string
	nodes    []Node
	tasks    []Task
}

// readInputs parses or loads each flag's value; an error names the flag.
func readInputs(c *cli.Context) (inputs, error) {
	var in inputs
	for _, f := range []struct {
		flag string
		read func(string) error
	}{
		{"seeds", func(s string) (err error) { in.seeds, err = ParseSeeds(s); return err }},
		{"policy", func(s string) (err error) { in.policies, err = ParsePolicies(s); return err }},
		{"nodes", func(s string) (err error) { in.nodes, err = LoadNodes(s); return err }},
		{"pods", func(s string) (err error) { in.tasks, err = LoadTasks(s); return err }},
	} {
		if err := f.read(c.String(f.flag)); err != nil {
			return in, fmt.Errorf("--%s: %w", f.flag, err)
		}
	}
	return in, nil
}

func run(c *cli.Context, stdout io.Writer) error {
	if c.Float64("tune") <= 0 {
		return fmt.Errorf("--tune %v: want a positive ratio", c.Float64("tune"))
	}
	if c.Int("parallel") < 1 {
		return fmt.Errorf("--parallel %d: want at least 1", c.Int("parallel"))
	}
	in, err := readInputs(c)
	if err != nil {
		return err
	}
	seeds, policies, nodes, tasks := in.seeds, in.policies, in.nodes, in.tasks
	if n := c.Int("scale"); n < 0 {
		return fmt.Errorf("--scale %d: want a number of nodes, or 0", n)
	} else if n > 0 {
		nodes = Scale(nodes, n)
	}
	capacity := 0
	for _, n := range nodes {
		capacity += n.GPUs * placement.Whole
	}
	list := listName(c.String("pods"))
	how := "fgd and frag-fit through gpushare.Fleet"
	if c.Bool("exhaustive") {
		how = "every decision through placement.PlaceOne"
	}
	fmt.Fprintf(stdout, "placebench openb: %d nodes (%d GPUs), task list %s (%d tasks), seeds %s, tune %.2f, %s; %s, %d cores\n",
		len(nodes), capacity/placement.Whole, list, len(tasks), c.String("seeds"), c.Float64("tune"), how, runtime.Version(), runtime.NumCPU())
	runs, err := replayAll(nodes, tasks, capacity, c.Float64("tune"), policies, seeds, c.Int("parallel"), c.Bool("exhaustive"))
	if err != nil {
		return err
	}
	paper := list
	if c.Int("scale") > 0 {
		paper = "" // the paper's figures are of the trace's cluster
	}
	if err := WriteTable(stdout, paper, policies, runs); err != nil {
		return err
	}
	if path := c.String("csv"); path != "" {
		if err := writeFile(path, func(w io.Writer) error { return WriteCSV(w, runs) }); err != nil {
			return fmt.Errorf("--csv: %w", err)
		}
	}
	if path := c.String("svg"); path != "" {
		title := fmt.Sprintf("GPU allocation ratio as tasks arrive: openb %s, mean of seeds %s", list, c.String("seeds"))
		if err := writeFile(path, func(w io.Writer) error { return WriteSVG(w, title, policies, runs) }); err != nil {
			return fmt.Errorf("--svg: %w", err)
		}
	}
	return nil
}

// replayAll replays every (policy, seed), parallel at once.
func replayAll(nodes []Node, tasks []Task, capacity int, tune float64, policies []string, seeds []uint64, parallel int, exhaustive bool) ([]*Run, error) {
	type job struct {
		policy string
		seed   uint64
		at     int
	}
	var jobs []job
	for _, p := range policies {
		for _, s := range seeds {
			jobs = append(jobs, job{p, s, len(jobs)})
		}
	}
	arrivals := map[uint64][]Task{}
	for _, s := range seeds {
		arrivals[s] = Arrivals(tasks, capacity, tune, s)
	}
	runs := make([]*Run, len(jobs))
	errs := make([]error, len(jobs))
	ch := make(chan job)
	var wg sync.WaitGroup
	for range parallel {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range ch {
				p, err := NewPolicy(j.policy, j.seed, tasks, nodes)
				if err == nil {
					runs[j.at], err = replay(nodes, arrivals[j.seed], p, j.seed, exhaustive)
				}
				errs[j.at] = err
			}
		}()
	}
	for _, j := range jobs {
		ch <- j
	}
	close(ch)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return runs, nil
}

// ParseSeeds reads "42-51" or "1,2,3".
func ParseSeeds(s string) ([]uint64, error) {
	if a, b, ok := strings.Cut(s, "-"); ok {
		lo, err1 := strconv.ParseUint(a, 10, 64)
		hi, err2 := strconv.ParseUint(b, 10, 64)
		if err1 != nil || err2 != nil || hi < lo || hi-lo > 1000 {
			return nil, fmt.Errorf("%q: want A-B with A <= B (at most 1,001 seeds)", s)
		}
		var out []uint64
		for v := lo; v <= hi; v++ {
			out = append(out, v)
		}
		return out, nil
	}
	var out []uint64
	for _, part := range strings.Split(s, ",") {
		v, err := strconv.ParseUint(strings.TrimSpace(part), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%q: %q is not a seed", s, part)
		}
		out = append(out, v)
	}
	return out, nil
}

// ParsePolicies reads "all" (every registered policy) or a list of names.
func ParsePolicies(s string) ([]string, error) {
	known := placement.Names()
	if s == "all" {
		return known, nil
	}
	var out []string
	for _, name := range strings.Split(s, ",") {
		name = strings.TrimSpace(name)
		if !slices.Contains(known, name) {
			return nil, fmt.Errorf("unknown policy %q (known: %s, or all)", name, strings.Join(known, ", "))
		}
		if !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out, nil
}

// listName is the task list's name: default, cpu050... from
// openb_pod_list_NAME.csv.
func listName(path string) string {
	base := strings.TrimSuffix(filepath.Base(path), ".csv")
	return strings.TrimPrefix(base, "openb_pod_list_")
}

func writeFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
