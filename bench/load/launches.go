package load

import (
	"context"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/berth-cluster/berth/bench/internal/benchstat"
	"github.com/berth-cluster/berth/internal/poll"
	"github.com/berth-cluster/berth/wire"
)

type lnParams struct {
	fleetParams
	Apps                int      `json:"apps"`
	AppCores            int      `json:"appMaxCores"`
	CoresPerExecutor    int      `json:"coresPerExecutor"`
	MemoryPerExecutorMB int      `json:"memoryPerExecutorMB"`
	Concurrency         int      `json:"concurrency"`
	WorkerTimeout       duration `json:"workerTimeout"`
	Lease               string   `json:"lease"`
	Timeout             duration `json:"timeout"`
	Order               string   `json:"order"`
	appsFirst           bool
}

// readLaunchParams reads and checks the flags of launches.
func readLaunchParams(c *cli.Context) (*lnParams, error) {
	p := &lnParams{
		fleetParams: readFleetParams(c), Apps: c.Int("apps"), AppCores: c.Int("app-cores"),
		CoresPerExecutor: c.Int("cores-per-executor"), MemoryPerExecutorMB: c.Int("memory-per-executor-mb"),
		Concurrency: c.Int("concurrency"), Lease: c.String("lease"), Order: c.String("order"),
		WorkerTimeout: duration(c.Duration("worker-timeout")), Timeout: duration(c.Duration("timeout")),
	}
	if p.Order != "workers-first" && p.Order != "apps-first" {
		return nil, fmt.Errorf("--order %q: want workers-first or apps-first", p.Order)
	}
	p.appsFirst = p.Order == "apps-first"
	if p.Workers <= 0 || p.Apps <= 0 || p.AppCores <= 0 || p.Concurrency <= 0 || p.WorkerTimeout <= 0 || p.Timeout <= 0 {
		return nil, fmt.Errorf("--workers, --apps, --app-cores, --concurrency, --worker-timeout and --timeout must be positive")
	}
	if p.Lease != "heartbeat" && p.Lease != "stream" {
		return nil, fmt.Errorf("--lease %q: want heartbeat or stream", p.Lease)
	}
	if need, have := p.Apps*p.AppCores, p.Workers*p.WorkerCores; need > have {
		return nil, fmt.Errorf("the apps ask for %d cores, the workers have %d", need, have)
	}
	return p, nil
}

type lnResults struct {
	Apps      int `json:"apps"`
	Cores     int `json:"cores"`     // asked for in all
	Executors int `json:"executors"` // launched
	Running   int `json:"running"`   // RUNNING accepted
	// Order: workers-first (the apps arrive at a ready cluster) or
	// apps-first (the apps wait, then the workers register).
	Order string `json:"order"`
	// Launch times are from the first app registration sent (workers-first)
	// or from the first worker registration sent (apps-first), in ms.
	WorkersRegisteredMs float64 `json:"workersRegisteredMs,omitempty"` // apps-first: all workers registered
	RegisteredMs        float64 `json:"allRegisteredMs"`
	FirstLaunchMs       float64 `json:"firstLaunchMs"`
	AllLaunchedMs       float64 `json:"allLaunchedMs"`
	AllRunningMs        float64 `json:"allRunningMs"`
	RegsPerSec          float64 `json:"registrationsPerSec"`
	LaunchesPerSec      float64 `json:"launchesPerSec"` // executors / all launched
	RunningPerSec       float64 `json:"runningPerSec"`  // executors / all running
	RegLatency          Summary `json:"registrationLatency"`
	// AppLaunched: from an app's registration sent to its last executor launched.
	AppLaunched Summary `json:"appSubmitToAllLaunched"`
	// Teardown: every app unregistered (at --concurrency), until every
	// executor was killed on the workers.
	UnregisterMs     float64 `json:"unregisterMs"`
	AllKilledMs      float64 `json:"allKilledMs"`
	KillsPerSec      float64 `json:"killsPerSec"`
	MasterCPUPercent float64 `json:"masterCpuPercent"` // over registration to all running; -1 unknown
	ToolCPUPercent   float64 `json:"toolCpuPercent"`
	LeaseErrors      int64   `json:"leaseErrors"`
	fleetOutcome
}

const launchesDescription = `Registers W workers, then --apps apps as fast as --concurrency allows, each
asking for --app-cores cores in executors of --cores-per-executor, and keeps
their leases (app heartbeats, or event streams with --lease stream). Measures
until every core asked for was launched on a worker and every RUNNING report
accepted; then unregisters every app and measures until every executor was
killed. The cluster must have room for all of it.

With --order apps-first the apps register before any worker, so they all wait;
the launch figures then count from the first worker registration: how fast the
master places and delivers a backlog, apart from how fast it takes apps.`

func launchesCommand(out io.Writer) *cli.Command {
	return measure[*lnParams]{
		name:        "launches",
		usage:       "register many apps at once: registrations/s and executor launches/s",
		description: launchesDescription,
		flags: append(fleetFlags(50, 64, 256<<10),
			&cli.IntFlag{Name: "apps", Value: 200, Usage: "apps to register"},
			&cli.IntFlag{Name: "app-cores", Value: 8, Usage: "maxCores of each app"},
			&cli.IntFlag{Name: "cores-per-executor", Value: 1, Usage: "coresPerExecutor of each app"},
			&cli.IntFlag{Name: "memory-per-executor-mb", Value: 256, Usage: "memoryPerExecutorMB of each app"},
			&cli.IntFlag{Name: "concurrency", Value: 32, Usage: "registrations in flight at once"},
			&cli.DurationFlag{Name: "worker-timeout", Value: 8 * time.Second, Usage: "master --worker-timeout (and the apps' timeout)"},
			&cli.StringFlag{Name: "lease", Value: "heartbeat", Usage: "how apps keep their lease: heartbeat (POST every quarter timeout, at most 1s) or stream"},
			&cli.DurationFlag{Name: "timeout", Value: 2 * time.Minute, Usage: "bound on each phase"},
			&cli.StringFlag{Name: "order", Value: "workers-first", Usage: "workers-first: apps arrive at a ready cluster (launches follow the registrations); apps-first: every app waits, then the workers register (a burst of launches)"},
		),
		params: readLaunchParams,
		run:    runLaunches,
	}.command(out)
}

type appReg struct {
	id       string
	sent     time.Time
	answered time.Time
}

func runLaunches(ctx context.Context, cm *common, p *lnParams, r *Report) error {
	res := &lnResults{Apps: p.Apps, Cores: p.Apps * p.AppCores, MasterCPUPercent: -1, Order: p.Order}
	r.Results = res
	spec := fleetSpec{master: "master-launches", workerTimeout: time.Duration(p.WorkerTimeout), minCoreUnit: 1, workers: p.fleetParams}
	return cm.withFleet(ctx, r, spec, &res.fleetOutcome, func(tgt *target, f *fleet) error {
		return launch(ctx, cm, p, tgt, f, r, res)
	})
}

// launch registers the apps, measures their launches and teardown on a
// master and a fleet opened for it, and fills the report.
func launch(ctx context.Context, cm *common, p *lnParams, tgt *target, f *fleet, r *Report, res *lnResults) error {
	mc := f.mc
	if !p.appsFirst {
		if _, err := f.registerAll(ctx, cm.inFlight); err != nil {
			return err
		}
		poll.Sleep(ctx, time.Duration(f.ws[0].interval.Load())) // every worker has heartbeated once
	}

	// Leases run until the end of the scenario.
	leaseCtx, stopLeases := context.WithCancel(ctx)
	var leaseWG sync.WaitGroup
	var leaseErrs atomic.Int64
	defer func() {
		stopLeases()
		leaseWG.Wait()
		res.LeaseErrors = leaseErrs.Load()
	}()
	leaseEvery := min(time.Second, time.Duration(p.WorkerTimeout)/4)
	leaseStop := make([]context.CancelFunc, p.Apps) // each app's, stopped before it is unregistered
	startLease := func(i int, id string) {
		leaseCtx, stop := context.WithCancel(leaseCtx)
		leaseStop[i] = stop
		if p.Lease == "stream" {
			keepStream(leaseCtx, mc, id, &eventLog{}, f, &leaseWG)
			return
		}
		leaseWG.Add(1)
		go func() {
			defer leaseWG.Done()
			t := time.NewTicker(leaseEvery)
			defer t.Stop()
			for {
				select {
				case <-leaseCtx.Done():
					return
				case <-t.C:
				}
				if err := mc.do(leaseCtx, on(wire.MasterAPI.AppHeartbeat, wire.None{}, id), nil); err != nil && leaseCtx.Err() == nil {
					leaseErrs.Add(1)
					f.note("lease", "heartbeat of app %s: %v", id, err)
				}
			}
		}()
	}

	cpu0, self0, tCPU := int64(-1), selfCPU(), time.Now()
	if tgt.proc != nil {
		cpu0 = tgt.proc.cpuTicks()
	}
	launch0, ack0 := f.counts()
	regs := make([]appReg, p.Apps)
	t0 := time.Now()
	err := inParallel(ctx, p.Apps, p.Concurrency, func(i int) error {
		var sub wire.Submitted
		sent := time.Now()
		err := mc.do(ctx, on(wire.MasterAPI.RegisterApp, wire.AppDescription{
			Name: fmt.Sprintf("berthbench-%04d", i), Command: []string{"/bin/true"},
			MaxCores: p.AppCores, CoresPerExecutor: p.CoresPerExecutor, MemoryPerExecutorMB: p.MemoryPerExecutorMB,
		}), &sub)
		if err != nil {
			return fmt.Errorf("registering app %d: %w", i, err)
		}
		regs[i] = appReg{id: sub.ID, sent: sent, answered: time.Now()}
		startLease(i, sub.ID)
		return nil
	})
	if err != nil {
		return err
	}
	tRegs := time.Now()
	res.RegisteredMs = benchstat.Ms(tRegs.Sub(t0))
	res.RegsPerSec = benchstat.Rate(p.Apps, tRegs.Sub(t0))
	if p.appsFirst {
		// Every app waits; the launches start with the first worker.
		t0 = time.Now()
		if _, err := f.registerAll(ctx, cm.inFlight); err != nil {
			return err
		}
		res.WorkersRegisteredMs = benchstat.Ms(time.Since(t0))
	}
	var regLat []time.Duration
	ours := map[string]int{}
	for i, rg := range regs {
		regLat = append(regLat, rg.answered.Sub(rg.sent))
		ours[rg.id] = i
	}
	res.RegLatency = benchstat.Summarize(regLat)

	// Until every core asked for is launched and every launch is RUNNING.
	var tFirst, tAll, tRun time.Time
	appLast := make([]time.Time, p.Apps)
	cores, launched := 0, map[execKey]bool{}
	seenL, seenA, running := launch0, ack0, 0
	// A RUNNING report can be read in the same poll as its launch but
	// after it was listed (the launches are read first): it waits here.
	early := map[execKey]time.Time{}
	ran := func(at time.Time) {
		running++
		if at.After(tRun) {
			tRun = at
		}
	}
	done := poll.Within(ctx, time.Duration(p.Timeout), pollEvery, func() bool {
		for _, l := range f.launchesSince(seenL) {
			seenL++
			i, ok := ours[l.AppID]
			if !ok {
				continue
			}
			if tFirst.IsZero() {
				tFirst = l.At
			}
			cores += l.Cores
			k := execKey{l.AppID, l.ExecID}
			launched[k] = true
			if at, ok := early[k]; ok {
				delete(early, k)
				ran(at)
			}
			appLast[i] = l.At
			if cores >= res.Cores && tAll.IsZero() {
				tAll = l.At
			}
		}
		for _, a := range f.acksSince(seenA) {
			seenA++
			if k := (execKey{a.AppID, a.ExecID}); launched[k] {
				ran(a.At)
			} else {
				early[k] = a.At
			}
		}
		return !tAll.IsZero() && running == len(launched)
	})
	window := time.Since(tCPU)
	if tgt.proc != nil && cpu0 >= 0 {
		if cpu1 := tgt.proc.cpuTicks(); cpu1 >= 0 {
			res.MasterCPUPercent = 100 * float64(cpu1-cpu0) / benchstat.ClockTicks / window.Seconds()
		}
	}
	res.ToolCPUPercent = 100 * (selfCPU() - self0).Seconds() / window.Seconds()
	res.Executors, res.Running = len(launched), running
	if !done {
		return fmt.Errorf("within %s: %d of %d cores launched, %d of %d executors RUNNING", p.Timeout, cores, res.Cores, running, len(launched))
	}
	res.FirstLaunchMs = benchstat.Ms(tFirst.Sub(t0))
	res.AllLaunchedMs = benchstat.Ms(tAll.Sub(t0))
	res.AllRunningMs = benchstat.Ms(tRun.Sub(t0))
	res.LaunchesPerSec = benchstat.Rate(res.Executors, tAll.Sub(t0))
	res.RunningPerSec = benchstat.Rate(res.Executors, tRun.Sub(t0))
	var appLat []time.Duration
	for i, rg := range regs {
		appLat = append(appLat, appLast[i].Sub(rg.sent))
	}
	res.AppLaunched = benchstat.Summarize(appLat)
	if cores != res.Cores {
		r.Problems = append(r.Problems, fmt.Sprintf("%d cores launched for %d asked", cores, res.Cores))
	}
	fmt.Fprintf(cm.out, "%d apps registered in %.0f ms; %d executors launched in %.0f ms, RUNNING in %.0f ms\n",
		p.Apps, res.RegisteredMs, res.Executors, res.AllLaunchedMs, res.AllRunningMs)

	// Teardown: unregister every app; the master kills their executors.
	k0 := f.n.kills.Load()
	tU := time.Now()
	_ = inParallel(ctx, p.Apps, p.Concurrency, func(i int) error {
		leaseStop[i]()
		if err := mc.do(ctx, on(wire.MasterAPI.UnregisterApp, wire.None{}, regs[i].id), nil); err != nil {
			f.note("unregister", "unregistering %s: %v", regs[i].id, err)
		}
		return nil
	})
	res.UnregisterMs = benchstat.Ms(time.Since(tU))
	live := func() int {
		n := 0
		for _, w := range f.ws {
			w.mu.Lock()
			for k := range w.execs {
				if _, ok := ours[k.app]; ok {
					n++
				}
			}
			w.mu.Unlock()
		}
		return n
	}
	if poll.Within(ctx, time.Duration(p.Timeout), pollEvery, func() bool { return live() == 0 }) {
		res.AllKilledMs = benchstat.Ms(time.Since(tU))
		res.KillsPerSec = benchstat.Rate(int(f.n.kills.Load()-k0), time.Since(tU))
	} else {
		r.Problems = append(r.Problems, fmt.Sprintf("%d executors still live %s after unregistering every app", live(), p.Timeout))
	}
	stopLeases()
	leaseWG.Wait()
	res.Fleet = f.snapshot()
	r.Problems = append(r.Problems, fleetProblems(f)...)

	title := "launches (ms, from the first app registration sent)"
	if p.appsFirst {
		title = fmt.Sprintf("launches, apps first (registrations: ms from the first sent; launches: ms from the first worker registration; the %d workers took %.0f ms)", p.Workers, res.WorkersRegisteredMs)
	}
	t := table{Name: "launches", Title: title, Header: []string{
		"apps", "executors", "registered", "reg/s", "reg p50", "reg p99", "first launch", "all launched", "launches/s",
		"all RUNNING", "RUNNING/s", "app→launched p50", "p99", "master CPU%", "tool CPU%", "teardown", "kills/s"}}
	t.add(p.Apps, res.Executors, res.RegisteredMs, res.RegsPerSec, res.RegLatency.P50, res.RegLatency.P99, res.FirstLaunchMs,
		res.AllLaunchedMs, res.LaunchesPerSec, res.AllRunningMs, res.RunningPerSec, res.AppLaunched.P50, res.AppLaunched.P99,
		cpuCell(res.MasterCPUPercent), cpuCell(res.ToolCPUPercent), res.AllKilledMs, res.KillsPerSec)
	r.Tables = append(r.Tables, t)
	r.Verdict = append(r.Verdict,
		fmt.Sprintf("registrations: %.0f/s (%d apps in %.0f ms, p50 %.1f ms, p99 %.1f ms each)", res.RegsPerSec, p.Apps, res.RegisteredMs, res.RegLatency.P50, res.RegLatency.P99),
		fmt.Sprintf("executor launches: %.0f/s (%d executors on %d workers in %.0f ms; all RUNNING after %.0f ms, %.0f/s)",
			res.LaunchesPerSec, res.Executors, p.Workers, res.AllLaunchedMs, res.AllRunningMs, res.RunningPerSec))
	return nil
}
