package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/berth-cluster/berth/wire"
)

type foParams struct {
	Workers             int     `json:"workers"`
	WorkerCores         int     `json:"workerCores"`
	WorkerMemMB         int     `json:"workerMemoryMB"`
	AppCores            int     `json:"appMaxCores"`
	AppFraction         float64 `json:"appFraction"`
	CoresPerExecutor    int     `json:"coresPerExecutor"`
	MemoryPerExecutorMB int     `json:"memoryPerExecutorMB"`
	MinCoreUnit         int     `json:"minCoreUnit"`
	WorkerTimeout       string  `json:"workerTimeout"`
	Repeat              int     `json:"repeat"`
	Settle              string  `json:"settle"`
	RepTimeout          string  `json:"repTimeout"`

	workerTimeout, settle, repTimeout time.Duration
}

// foRep is one worker death.
type foRep struct {
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

type foResults struct {
	AppID      string             `json:"appId"`
	AppCores   int                `json:"appMaxCores"`
	TimeoutMs  float64            `json:"workerTimeoutMs"`
	IntervalMs float64            `json:"heartbeatIntervalMs"`
	Shape      string             `json:"shape"` // the app's executors once placed, by size
	Reps       []foRep            `json:"reps"`
	Summary    map[string]Summary `json:"summary"`
	// FalseExpiries: workers the tool did not kill that the master forgot.
	FalseExpiries int64            `json:"falseExpiries"`
	Fleet         map[string]int64 `json:"fleet,omitempty"`
	MasterLog     *MasterLog       `json:"masterLog,omitempty"`
}

func failoverCommand(out io.Writer) *cli.Command {
	return &cli.Command{
		Name:    "failover-of-worker",
		Aliases: []string{"failover"},
		Usage:   "kill workers that hold executors: time to DEAD and to replacement launches",
		Description: `Registers W workers and one app asking for --app-fraction of the cores (or
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
then bring the worker back empty under the same id and wait --settle.`,
		Flags: append([]cli.Flag{
			&cli.IntFlag{Name: "workers", Value: 100, Usage: "workers"},
			&cli.IntFlag{Name: "worker-cores", Value: 8, Usage: "cores per worker"},
			&cli.IntFlag{Name: "worker-memory-mb", Value: 16384, Usage: "memory per worker"},
			&cli.IntFlag{Name: "app-cores", Usage: "maxCores of the app (default: --app-fraction of all cores)"},
			&cli.Float64Flag{Name: "app-fraction", Value: 0.6, Usage: "share of the cluster's cores the app asks for"},
			&cli.IntFlag{Name: "cores-per-executor", Usage: "coresPerExecutor of the app (0: one executor per worker, sized by placement)"},
			&cli.IntFlag{Name: "memory-per-executor-mb", Value: 512, Usage: "memoryPerExecutorMB of the app"},
			&cli.IntFlag{Name: "min-core-unit", Value: 4, Usage: "master --min-core-unit"},
			&cli.DurationFlag{Name: "worker-timeout", Value: 2 * time.Second, Usage: "master --worker-timeout"},
			&cli.IntFlag{Name: "repeat", Value: 20, Usage: "worker deaths"},
			&cli.DurationFlag{Name: "settle", Value: 500 * time.Millisecond, Usage: "pause after a worker came back"},
			&cli.DurationFlag{Name: "rep-timeout", Value: 15 * time.Second, Usage: "bound on each phase of a repetition"},
		}, commonFlags()...),
		Action: func(c *cli.Context) error {
			p := &foParams{
				Workers: c.Int("workers"), WorkerCores: c.Int("worker-cores"), WorkerMemMB: c.Int("worker-memory-mb"),
				AppCores: c.Int("app-cores"), AppFraction: c.Float64("app-fraction"),
				CoresPerExecutor: c.Int("cores-per-executor"), MemoryPerExecutorMB: c.Int("memory-per-executor-mb"),
				MinCoreUnit: c.Int("min-core-unit"), Repeat: c.Int("repeat"),
				workerTimeout: c.Duration("worker-timeout"), settle: c.Duration("settle"), repTimeout: c.Duration("rep-timeout"),
			}
			if p.AppCores == 0 {
				p.AppCores = int(p.AppFraction * float64(p.Workers*p.WorkerCores))
			}
			if p.Workers < 2 || p.AppCores <= 0 || p.Repeat <= 0 || p.workerTimeout <= 0 || p.repTimeout <= 0 {
				return fmt.Errorf("need at least 2 workers, a positive app size, --repeat, --worker-timeout and --rep-timeout")
			}
			if p.AppCores > p.Workers*p.WorkerCores-p.WorkerCores {
				return fmt.Errorf("the app (%d cores) must leave room for a lost worker's cores (%d of %d free)", p.AppCores, p.Workers*p.WorkerCores-p.AppCores, p.WorkerCores)
			}
			p.WorkerTimeout, p.Settle, p.RepTimeout = p.workerTimeout.String(), p.settle.String(), p.repTimeout.String()
			return runScenario(c, out, "failover-of-worker", p, func(ctx context.Context, cm *common, r *Report) error {
				return runFailover(ctx, cm, p, r)
			})
		},
	}
}

// eventLog keeps an app's stream events with the time each was read.
type eventLog struct {
	mu  sync.Mutex
	evs []timedEvent
}

func (l *eventLog) add(ev timedEvent) {
	l.mu.Lock()
	l.evs = append(l.evs, ev)
	l.mu.Unlock()
}

func (l *eventLog) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.evs)
}

// lost lists, from index i on, the executorLost events of worker id.
func (l *eventLog) lost(i int, id string) []timedEvent {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []timedEvent
	for _, ev := range l.evs[min(i, len(l.evs)):] {
		if ev.Type == wire.EventExecutorLost && ev.Executor != nil && ev.Executor.WorkerID == id {
			out = append(out, ev)
		}
	}
	return out
}

// keepStream holds the app's event stream open (its lease) until ctx ends
// or the app is removed, reopening it if the master closes it otherwise.
func keepStream(ctx context.Context, mc *masterClient, appID string, log *eventLog, f *fleet, wg *sync.WaitGroup) {
	wg.Add(1)
	go func() {
		defer wg.Done()
		removed := false
		for ctx.Err() == nil && !removed {
			err := mc.streamEvents(ctx, appID, func(ev timedEvent) {
				removed = removed || ev.Type == wire.EventAppRemoved
				log.add(ev)
			})
			if ctx.Err() != nil || removed {
				return
			}
			f.note("stream", "event stream of %s ended: %v; reopening", appID, err)
			sleepCtx(ctx, 100*time.Millisecond)
		}
	}()
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

func runFailover(ctx context.Context, cm *common, p *foParams, r *Report) error {
	res := &foResults{AppCores: p.AppCores, Summary: map[string]Summary{}}
	r.Results = res
	tgt, mc, err := cm.openReported(ctx, r, "master-failover", p.workerTimeout, p.MinCoreUnit)
	if err != nil {
		return err
	}
	var f *fleet
	defer func() {
		ml := tgt.shutdown(mc, f)
		if ml != nil {
			res.MasterLog = ml
			r.Problems = append(r.Problems, ml.problems(noSecretWarning, "removing worker")...)
			if ok := countOK(res.Reps); ml.RemovedWorkers != ok {
				r.Problems = append(r.Problems, fmt.Sprintf("the master removed %d workers; the tool killed %d that were seen DEAD", ml.RemovedWorkers, ok))
			}
		}
	}()
	f, err = newFleet(fleetConfig{
		Workers: p.Workers, Cores: p.WorkerCores, MemoryMB: p.WorkerMemMB,
		IDPrefix: cm.idPrefix, PortBase: cm.portBase, Secret: cm.secret, Seed: cm.seed,
	}, mc)
	if err != nil {
		return err
	}
	if _, err := f.registerAll(ctx, cm.inFlight); err != nil {
		return err
	}
	interval := time.Duration(f.ws[0].interval.Load())
	timeout := p.workerTimeout
	if tgt.proc == nil {
		timeout = 4 * interval
	}
	res.TimeoutMs, res.IntervalMs = ms(timeout), ms(interval)

	var sub wire.Submitted
	err = mc.do(ctx, http.MethodPost, "/v1/apps", wire.AppDescription{
		Name: "berthload-failover", Command: []string{"/bin/true"}, MaxCores: p.AppCores,
		CoresPerExecutor: p.CoresPerExecutor, MemoryPerExecutorMB: p.MemoryPerExecutorMB,
	}, &sub)
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
		_ = mc.do(context.Background(), http.MethodPost, "/v1/apps/"+sub.ID+"/unregister", nil, nil)
		stopStream()
		streamWG.Wait()
	}()
	if !waitFor(ctx, p.repTimeout, func() bool { return appSettled(f, sub.ID, p.AppCores) }) {
		cores, _ := f.appCores(sub.ID)
		return fmt.Errorf("the app got %d of its %d cores running within %s", cores, p.AppCores, p.repTimeout)
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
	failoverTables(r, res, timeout)
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

func countOK(reps []foRep) int {
	n := 0
	for _, r := range reps {
		if r.KillToDeadMs > 0 {
			n++
		}
	}
	return n
}

// killOne kills one worker holding executors of the app, measures, and
// brings it back.
func killOne(ctx context.Context, proc *masterProc, f *fleet, events *eventLog, appID string, p *foParams, timeout time.Duration, rng *rand.Rand) (rep foRep) {
	if !waitFor(ctx, p.repTimeout, func() bool { return appSettled(f, appID, p.AppCores) }) {
		cores, _ := f.appCores(appID)
		rep.Err = fmt.Sprintf("the app held %d of %d cores before the kill", cores, p.AppCores)
		return rep
	}
	_, holders := f.appCores(appID)
	if len(holders) == 0 {
		rep.Err = "no worker holds executors"
		return rep
	}
	victim := holders[rng.IntN(len(holders))]
	rep.Victim = victim.id
	rep.LostCores = victim.coresOf(appID)
	evIdx := events.len()
	launchIdx, ackIdx := f.counts()

	lastHB := time.Unix(0, victim.lastOK.Load())
	tKill := time.Now()
	victim.kill()
	rep.SinceHeartbeatMs = ms(tKill.Sub(lastHB))
	defer func() {
		if err := victim.revive(ctx); err != nil && rep.Err == "" {
			rep.Err = "reviving: " + err.Error()
		}
		sleepCtx(ctx, p.settle)
	}()

	var tDead time.Time
	if !waitFor(ctx, 3*timeout+p.repTimeout, func() bool {
		if lost := events.lost(evIdx, victim.id); len(lost) > 0 {
			tDead = lost[0].At
			return true
		}
		return false
	}) {
		rep.Err = fmt.Sprintf("%s was not declared DEAD within %s", victim.id, 3*timeout+p.repTimeout)
		return rep
	}
	rep.DeadFrom = "stream"
	if proc != nil {
		if at, ok := proc.logTime("removing worker", victim.id, tKill); ok {
			rep.DeadFrom, rep.StreamLagMs = "master log", ms(tDead.Sub(at))
			tDead = at
		}
	}
	rep.KillToDeadMs = ms(tDead.Sub(tKill))
	// The last heartbeat the master took, from its own record (a heartbeat
	// in flight at the kill may have reached it after the tool stopped
	// listening); the tool's last acknowledged one if the master's is not
	// listed.
	rep.LastHeartbeatFrom = "tool"
	if cs, err := f.mc.cluster(ctx); err == nil {
		for _, ws := range cs.Workers {
			if ws.ID == victim.id && !ws.LastHeartbeat.IsZero() {
				lastHB, rep.LastHeartbeatFrom = ws.LastHeartbeat, "master"
				rep.SinceHeartbeatMs = ms(tKill.Sub(lastHB))
			}
		}
	}
	rep.HeartbeatToDeadMs = ms(tDead.Sub(lastHB))

	// Replacements: launches of the app on other workers since the kill,
	// until their cores cover what was lost.
	var replaced []launchRec
	var tAll time.Time
	placed := waitFor(ctx, p.repTimeout, func() bool {
		replaced, tAll = replaced[:0], time.Time{}
		cores := 0
		for _, l := range f.launchesSince(launchIdx) {
			if l.AppID != appID || l.Worker == victim.n {
				continue
			}
			replaced = append(replaced, l)
			cores += l.Cores
			if cores >= rep.LostCores && tAll.IsZero() {
				tAll = l.At
			}
		}
		return !tAll.IsZero()
	})
	rep.LostExecutors = len(events.lost(evIdx, victim.id))
	if len(replaced) > 0 {
		rep.DeadToFirstMs = ms(replaced[0].At.Sub(tDead))
	}
	if !placed {
		rep.Err = fmt.Sprintf("%d of %d lost cores placed again within %s", sumCores(replaced), rep.LostCores, p.repTimeout)
		return rep
	}
	rep.DeadToAllMs = ms(tAll.Sub(tDead))
	for _, l := range replaced {
		rep.Replacements++
		rep.ReplacementCores += l.Cores
	}
	want := map[execKey]bool{}
	for _, l := range replaced {
		want[execKey{l.AppID, l.ExecID}] = true
	}
	var tRun time.Time
	if !waitFor(ctx, p.repTimeout, func() bool {
		seen := 0
		for _, a := range f.acksSince(ackIdx) {
			if want[execKey{a.AppID, a.ExecID}] {
				seen++
				if a.At.After(tRun) {
					tRun = a.At
				}
			}
		}
		return seen == len(want)
	}) {
		rep.Err = "the replacements' RUNNING reports were not all accepted"
		return rep
	}
	rep.DeadToRunningMs = ms(tRun.Sub(tDead))
	return rep
}

func sumCores(ls []launchRec) int {
	n := 0
	for _, l := range ls {
		n += l.Cores
	}
	return n
}

func failoverTables(r *Report, res *foResults, timeout time.Duration) {
	reps := table{Name: "reps", Title: "worker deaths (ms)", Header: []string{
		"rep", "victim", "lost exec", "lost cores", "hb→kill", "kill→DEAD", "hb→DEAD", "DEAD from", "stream lag", "DEAD→first", "DEAD→all", "DEAD→running", "replacements", "error"}}
	series := map[string][]time.Duration{}
	order := []string{"kill→DEAD", "kill→DEAD − timeout", "last hb→DEAD − timeout", "DEAD→first launch", "DEAD→all launched", "DEAD→all running"}
	d := func(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
	for _, rp := range res.Reps {
		reps.add(rp.Rep, rp.Victim, rp.LostExecutors, rp.LostCores, rp.SinceHeartbeatMs, rp.KillToDeadMs, rp.HeartbeatToDeadMs, rp.DeadFrom, rp.StreamLagMs,
			rp.DeadToFirstMs, rp.DeadToAllMs, rp.DeadToRunningMs, fmt.Sprintf("%d (%d cores)", rp.Replacements, rp.ReplacementCores), rp.Err)
		if rp.Err != "" {
			continue
		}
		series[order[0]] = append(series[order[0]], d(rp.KillToDeadMs))
		series[order[1]] = append(series[order[1]], d(rp.KillToDeadMs)-timeout)
		series[order[2]] = append(series[order[2]], d(rp.HeartbeatToDeadMs)-timeout)
		series[order[3]] = append(series[order[3]], d(rp.DeadToFirstMs))
		series[order[4]] = append(series[order[4]], d(rp.DeadToAllMs))
		series[order[5]] = append(series[order[5]], d(rp.DeadToRunningMs))
	}
	sum := table{Name: "summary", Title: fmt.Sprintf("summary over the repetitions (ms; worker timeout %s)", timeout),
		Header: []string{"measure", "n", "min", "median", "p99", "max"}}
	for _, k := range order {
		s := summarize(series[k])
		res.Summary[k] = s
		sum.add(k, s.N, s.Min, s.P50, s.P99, s.Max)
	}
	r.Tables = append(r.Tables, reps, sum)
	ok := res.Summary[order[0]].N
	r.Verdict = append(r.Verdict,
		fmt.Sprintf("%d of %d worker deaths measured; false expiries of other workers: %d", ok, len(res.Reps), res.FalseExpiries),
		fmt.Sprintf("worker death → DEAD: median %.0f ms, p99 %.0f ms (timeout %s; detection beyond the timeout, from the last heartbeat: median %.0f ms, p99 %.0f ms)",
			res.Summary[order[0]].P50, res.Summary[order[0]].P99, timeout, res.Summary[order[2]].P50, res.Summary[order[2]].P99),
		fmt.Sprintf("DEAD → replacement executors launched: median %.2f ms, p99 %.2f ms (RUNNING accepted: median %.2f ms, p99 %.2f ms)",
			res.Summary[order[4]].P50, res.Summary[order[4]].P99, res.Summary[order[5]].P50, res.Summary[order[5]].P99))
}
