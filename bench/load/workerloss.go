package load

import (
	"context"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/berth-cluster/berth/bench/internal/benchstat"
	"github.com/berth-cluster/berth/internal/poll"
	"github.com/berth-cluster/berth/wire"
)

type lossParams struct {
	fleetParams
	AppCores            int      `json:"appMaxCores"`
	AppFraction         float64  `json:"appFraction"`
	CoresPerExecutor    int      `json:"coresPerExecutor"`
	MemoryPerExecutorMB int      `json:"memoryPerExecutorMB"`
	MinCoreUnit         int      `json:"minCoreUnit"`
	WorkerTimeout       duration `json:"workerTimeout"`
	Repeat              int      `json:"repeat"`
	Settle              duration `json:"settle"`
	RepTimeout          duration `json:"repTimeout"`
}

// readLossParams reads and checks the flags of worker-loss.
func readLossParams(c *cli.Context) (*lossParams, error) {
	p := &lossParams{
		fleetParams: readFleetParams(c), AppCores: c.Int("app-cores"), AppFraction: c.Float64("app-fraction"),
		CoresPerExecutor: c.Int("cores-per-executor"), MemoryPerExecutorMB: c.Int("memory-per-executor-mb"),
		MinCoreUnit: c.Int("min-core-unit"), Repeat: c.Int("repeat"),
		WorkerTimeout: duration(c.Duration("worker-timeout")), Settle: duration(c.Duration("settle")), RepTimeout: duration(c.Duration("rep-timeout")),
	}
	if p.AppCores == 0 {
		p.AppCores = int(p.AppFraction * float64(p.Workers*p.WorkerCores))
	}
	if p.Workers < 2 || p.AppCores <= 0 || p.Repeat <= 0 || p.WorkerTimeout <= 0 || p.RepTimeout <= 0 {
		return nil, fmt.Errorf("need at least 2 workers, a positive app size, --repeat, --worker-timeout and --rep-timeout")
	}
	if p.AppCores > p.Workers*p.WorkerCores-p.WorkerCores {
		return nil, fmt.Errorf("the app (%d cores) must leave room for a lost worker's cores (%d of %d free)", p.AppCores, p.Workers*p.WorkerCores-p.AppCores, p.WorkerCores)
	}
	return p, nil
}

// lossRep is one worker death.
type lossRep struct {
	Rep           int    `json:"rep"`
	Victim        string `json:"victim"`
	LostExecutors int    `json:"lostExecutors"` // executorLost events seen for it
	LostCores     int    `json:"lostCores"`
	// SinceHeartbeatMs: from the victim's last heartbeat to the kill
	// (negative: one in flight at the kill reached the master after it).
	SinceHeartbeatMs float64 `json:"sinceHeartbeatMs"`
	// LastHeartbeatFrom: "master" (its lastHeartbeat in GET /v1/cluster) or
	// "tool" (the last one the tool saw acknowledged).
	LastHeartbeatFrom string `json:"lastHeartbeatFrom"`
	// DeadFrom says which instant is DEAD: "master log" (the time stamp of
	// the master's "removing worker" line, when the tool started the master;
	// same host, same clock) or "stream" (when the app's client read the
	// first executorLost of the victim).
	DeadFrom string `json:"deadFrom"`
	// StreamLagMs: DEAD (master log) → the executorLost read on the stream.
	StreamLagMs float64 `json:"streamLagMs,omitempty"`
	// KillToDeadMs: kill → DEAD.
	KillToDeadMs float64 `json:"killToDeadMs"`
	// HeartbeatToDeadMs: last acknowledged heartbeat → DEAD; minus the
	// timeout it is how late the master noticed.
	HeartbeatToDeadMs float64 `json:"heartbeatToDeadMs"`
	// DeadToFirstMs / DeadToAllMs: DEAD → the first / the last replacement
	// LaunchExecutor received by another worker (all lost cores placed again).
	DeadToFirstMs float64 `json:"deadToFirstLaunchMs"`
	DeadToAllMs   float64 `json:"deadToAllLaunchedMs"`
	// DeadToRunningMs: DEAD → the master accepted the last replacement's RUNNING.
	DeadToRunningMs  float64 `json:"deadToAllRunningMs"`
	Replacements     int     `json:"replacements"`
	ReplacementCores int     `json:"replacementCores"`
	Err              string  `json:"error,omitempty"`
}

type lossResults struct {
	AppID      string             `json:"appId"`
	AppCores   int                `json:"appMaxCores"`
	TimeoutMs  float64            `json:"workerTimeoutMs"`
	IntervalMs float64            `json:"heartbeatIntervalMs"`
	Shape      string             `json:"shape"` // the app's executors once placed, by size
	Reps       []lossRep          `json:"reps"`
	Summary    map[string]Summary `json:"summary"`
	// FalseExpiries: workers the tool did not kill that the master forgot.
	FalseExpiries int64 `json:"falseExpiries"`
	fleetOutcome
}

const workerLossDescription = `Registers W workers and one app asking for --app-fraction of the cores (or
--app-cores), keeps the app's lease with its event stream, and waits until every
executor runs. Then --repeat times: pick (by --seed) a worker holding executors
of the app, kill it (no more heartbeats; commands to it get their connection
closed), and time
  kill → DEAD             DEAD is the time stamp of the master's "removing
                          worker" line when the tool started the master (same
                          host, same clock), else when the first executorLost
                          of that worker was read on the stream
  last heartbeat → DEAD   minus the worker timeout: how late the master noticed
                          (its own lastHeartbeat, from GET /v1/cluster)
  DEAD → first/all        replacement LaunchExecutor received by other workers
                          (all = their cores cover the cores lost)
  DEAD → running          the master accepted the replacements' RUNNING reports
then bring the worker back empty under the same id and wait --settle.`

func workerLossCommand(out io.Writer) *cli.Command {
	return measure[*lossParams]{
		name:        "worker-loss",
		usage:       "kill workers that hold executors: time to DEAD and to replacement launches",
		description: workerLossDescription,
		flags: append(fleetFlags(100, 8, 16384),
			&cli.IntFlag{Name: "app-cores", Usage: "maxCores of the app (default: --app-fraction of all cores)"},
			&cli.Float64Flag{Name: "app-fraction", Value: 0.6, Usage: "share of the cluster's cores the app asks for"},
			&cli.IntFlag{Name: "cores-per-executor", Usage: "coresPerExecutor of the app (0: one executor per worker, sized by placement)"},
			&cli.IntFlag{Name: "memory-per-executor-mb", Value: 512, Usage: "memoryPerExecutorMB of the app"},
			&cli.IntFlag{Name: "min-core-unit", Value: 4, Usage: "master --min-core-unit"},
			&cli.DurationFlag{Name: "worker-timeout", Value: 2 * time.Second, Usage: "master --worker-timeout"},
			&cli.IntFlag{Name: "repeat", Value: 20, Usage: "worker deaths"},
			&cli.DurationFlag{Name: "settle", Value: 500 * time.Millisecond, Usage: "pause after a worker came back"},
			&cli.DurationFlag{Name: "rep-timeout", Value: 15 * time.Second, Usage: "bound on each phase of a repetition"},
		),
		params: readLossParams,
		run:    runWorkerLoss,
	}.command(out)
}

// appSettled reports whether the app holds want cores on live workers, every
// executor RUNNING (the master accepted the report).
func appSettled(f *fleet, appID string, want int) bool {
	cores := 0
	for _, w := range f.ws {
		if w.dead.Load() {
			continue
		}
		w.mu.Lock()
		for k, e := range w.execs {
			if k.app == appID {
				if e.state != wire.ExecutorRunning {
					w.mu.Unlock()
					return false
				}
				cores += e.cores
			}
		}
		w.mu.Unlock()
	}
	return cores == want
}

func runWorkerLoss(ctx context.Context, cm *common, p *lossParams, r *Report) error {
	res := &lossResults{AppCores: p.AppCores, Summary: map[string]Summary{}}
	r.Results = res
	spec := fleetSpec{master: "master-worker-loss", workerTimeout: time.Duration(p.WorkerTimeout), minCoreUnit: p.MinCoreUnit, workers: p.fleetParams,
		expected: []string{"removing worker"}}
	err := cm.withFleet(ctx, r, spec, &res.fleetOutcome, func(tgt *target, f *fleet) error {
		return loseWorkers(ctx, cm, p, tgt, f, r, res)
	})
	if ok := countOK(res.Reps); res.MasterLog != nil && res.MasterLog.RemovedWorkers != ok {
		r.Problems = append(r.Problems, fmt.Sprintf("the master removed %d workers; the tool killed %d that were seen DEAD", res.MasterLog.RemovedWorkers, ok))
	}
	return err
}

// loseWorkers starts the app, kills and revives workers holding its
// executors on a master and a fleet opened for it, and fills the report.
func loseWorkers(ctx context.Context, cm *common, p *lossParams, tgt *target, f *fleet, r *Report, res *lossResults) error {
	mc := f.mc
	if _, err := f.registerAll(ctx, cm.inFlight); err != nil {
		return err
	}
	interval := time.Duration(f.ws[0].interval.Load())
	timeout := time.Duration(p.WorkerTimeout)
	if tgt.proc == nil {
		timeout = 4 * interval
	}
	res.TimeoutMs, res.IntervalMs = benchstat.Ms(timeout), benchstat.Ms(interval)

	var sub wire.Submitted
	err := mc.do(ctx, on(wire.MasterAPI.RegisterApp, wire.AppDescription{
		Name: "berthbench-worker-loss", Command: []string{"/bin/true"}, MaxCores: p.AppCores,
		CoresPerExecutor: p.CoresPerExecutor, MemoryPerExecutorMB: p.MemoryPerExecutorMB,
	}), &sub)
	if err != nil {
		return fmt.Errorf("registering the app: %w", err)
	}
	res.AppID = sub.ID
	streamCtx, stopStream := context.WithCancel(ctx)
	var streamWG sync.WaitGroup
	events := &eventLog{}
	keepStream(streamCtx, mc, sub.ID, events, f, &streamWG)
	defer func() {
		// The app is done: its client unregisters it, then the stream ends.
		_ = mc.do(context.Background(), on(wire.MasterAPI.UnregisterApp, wire.None{}, sub.ID), nil)
		stopStream()
		streamWG.Wait()
	}()
	if !poll.Within(ctx, time.Duration(p.RepTimeout), pollEvery, func() bool { return appSettled(f, sub.ID, p.AppCores) }) {
		cores, _ := f.appCores(sub.ID)
		return fmt.Errorf("the app got %d of its %d cores running within %s", cores, p.AppCores, p.RepTimeout)
	}
	res.Shape = executorShape(f, sub.ID)
	fmt.Fprintf(cm.out, "app %s: %d cores as %s of %d; heartbeat every %s, timeout %s\n",
		sub.ID, p.AppCores, res.Shape, p.Workers, interval, timeout)

	rng := rand.New(rand.NewPCG(cm.seed, 2))
	for i := range p.Repeat {
		if ctx.Err() != nil {
			break
		}
		rep := killOne(ctx, tgt.proc, f, events, sub.ID, p, timeout, rng)
		rep.Rep = i + 1
		res.Reps = append(res.Reps, rep)
		if rep.Err != "" {
			r.Problems = append(r.Problems, fmt.Sprintf("rep %d: %s", rep.Rep, rep.Err))
		}
		fmt.Fprintf(cm.out, "  rep %2d: %s kill→DEAD %.0f ms, DEAD→all launched %.2f ms %s\n", rep.Rep, rep.Victim, rep.KillToDeadMs, rep.DeadToAllMs, rep.Err)
	}
	res.FalseExpiries = f.n.reregistered.Load()
	res.Fleet = f.snapshot()
	r.Problems = append(r.Problems, fleetProblems(f)...)
	workerLossTables(r, res, timeout)
	return nil
}

// executorShape describes the app's live executors: how many of each size,
// on how many workers.
func executorShape(f *fleet, appID string) string {
	sizes := map[int]int{}
	execs, hosts := 0, 0
	for _, w := range f.ws {
		if w.dead.Load() {
			continue
		}
		w.mu.Lock()
		held := false
		for k, e := range w.execs {
			if k.app == appID {
				sizes[e.cores]++
				execs++
				held = true
			}
		}
		w.mu.Unlock()
		if held {
			hosts++
		}
	}
	keys := slices.Sorted(maps.Keys(sizes))
	var parts []string
	for _, k := range slices.Backward(keys) {
		parts = append(parts, fmt.Sprintf("%d×%dc", sizes[k], k))
	}
	return fmt.Sprintf("%d executors (%s) on %d workers", execs, strings.Join(parts, " + "), hosts)
}

func countOK(reps []lossRep) int {
	n := 0
	for _, r := range reps {
		if r.KillToDeadMs > 0 {
			n++
		}
	}
	return n
}
