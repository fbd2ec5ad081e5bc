package load

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/berth-cluster/berth/bench/internal/benchstat"
	"github.com/berth-cluster/berth/client"
	"github.com/berth-cluster/berth/internal/poll"
	"github.com/berth-cluster/berth/wire"
	"github.com/urfave/cli/v2"
)

type hbParams struct {
	Workers       []int    `json:"workers"`
	Duration      duration `json:"duration"`
	Warmup        duration `json:"warmup"`
	WorkerTimeout duration `json:"workerTimeout"`
	WorkerCores   int      `json:"workerCores"`
	WorkerMemMB   int      `json:"workerMemoryMB"`
	HeldRatio     float64  `json:"heldRatio"`
	rampParams
	NoListen bool `json:"noListen,omitempty"`
	APIProbe bool `json:"apiProbe,omitempty"`
}

// readHeartbeatParams reads and checks the flags of heartbeats.
func readHeartbeatParams(c *cli.Context) (*hbParams, error) {
	sizes, err := parseInts("workers", c.String("workers"))
	if err != nil {
		return nil, err
	}
	p := &hbParams{
		Workers: sizes, Duration: duration(c.Duration("duration")), Warmup: duration(c.Duration("warmup")),
		WorkerTimeout: duration(c.Duration("worker-timeout")), WorkerCores: c.Int("worker-cores"),
		WorkerMemMB: c.Int("worker-memory-mb"), HeldRatio: c.Float64("held-ratio"),
		rampParams: readRampParams(c),
		NoListen:   !c.Bool("listen"), APIProbe: c.Bool("api-probe"),
	}
	if p.Duration <= 0 || p.WorkerTimeout <= 0 || p.Warmup < 0 || p.RegParallel <= 0 || p.RampTimeout <= 0 {
		return nil, fmt.Errorf("--duration, --worker-timeout, --register-parallel and --ramp-timeout must be positive")
	}
	return p, nil
}

// parseInts reads a comma-separated list of positive integers, split as
// berth's own lists of masters are (blanks dropped).
func parseInts(flag, s string) ([]int, error) {
	var out []int
	for _, f := range client.SplitMasters(s) {
		n, err := strconv.Atoi(f)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("--%s: %q is not a positive integer", flag, f)
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--%s: no value", flag)
	}
	return out, nil
}

// hbRow is one fleet size.
type hbRow struct {
	Workers         int     `json:"workers"`
	IntervalMs      float64 `json:"intervalMs"`
	WindowSeconds   float64 `json:"windowSeconds"`
	OfferedPerSec   float64 `json:"offeredPerSec"`
	AchievedPerSec  float64 `json:"achievedPerSec"`
	Heartbeats      int     `json:"heartbeats"`          // acknowledged in the window
	Errors          int     `json:"errors"`              // failed in the window
	ErrorsTotal     int64   `json:"errorsTotal"`         // over the whole step
	RTT             Summary `json:"rtt"`                 // request sent → answer
	Lag             Summary `json:"lag"`                 // scheduled → answer (with the wait for a request slot)
	MaxGapMs        float64 `json:"maxGapMs"`            // longest silence of one worker, as the master saw it at most
	MaxGapOfTimeout float64 `json:"maxGapOfTimeout"`     // that gap / worker timeout
	FalseExpiries   int64   `json:"falseExpiries"`       // re-registrations the master asked for, over the whole step
	RampExpiries    int64   `json:"rampFalseExpiries"`   // of which before the window (registration ramp, warmup)
	WindowExpiries  int64   `json:"windowFalseExpiries"` // of which in the window
	NotAlive        int     `json:"notAlive"`            // of the W, not ALIVE in GET /v1/cluster at the end
	MasterRemoved   int     `json:"masterRemoved"`       // "removing worker" in the master's log
	ReconnectCmds   int64   `json:"reconnectCommands"`
	rampResult
	MasterCPUPercent float64 `json:"masterCpuPercent"` // of one core, over the window; -1 unknown
	ToolCPUPercent   float64 `json:"toolCpuPercent"`
	Held             bool    `json:"held"`
	// API: with --api-probe, the API as a user sees it in the window.
	API *ProbeResult `json:"api,omitempty"`
	fleetOutcome
	Err string `json:"error,omitempty"`
}

const heartbeatsDescription = `For each W in --workers (a fresh master each when --master-bin is given): register
W workers, start their heartbeats at random phases, wait --warmup, then measure
for --duration. The interval is the master's (a quarter of the worker timeout, up
to a third in a fleet larger than its --max-heartbeats-per-second allows; the
workers take it from each heartbeat's reply, as real ones do). A size is
held when every offered heartbeat was acknowledged (at least --held-ratio of the
offered rate, less one beat per worker that the window's edges may cut off; no
error), no worker was asked to register again, none is
missing or DEAD in GET /v1/cluster at the end, and the master logged no
removal.`

func heartbeatsCommand(out io.Writer) *cli.Command {
	return measure[*hbParams]{
		name:        "heartbeats",
		usage:       "W workers heartbeat for a while: rate held, latency, false expiries",
		description: heartbeatsDescription,
		flags: slices.Concat([]cli.Flag{
			&cli.StringFlag{Name: "workers", Value: "1000", Usage: "fleet sizes to try, comma-separated, in order"},
			&cli.DurationFlag{Name: "duration", Value: 30 * time.Second, Usage: "measurement window per size"},
			&cli.DurationFlag{Name: "warmup", Usage: "wait after the heartbeats start before measuring (default: two intervals)"},
			&cli.DurationFlag{Name: "worker-timeout", Value: 4 * time.Second, Usage: "master --worker-timeout (heartbeats every quarter of it, or up to a third in a fleet larger than the master's --max-heartbeats-per-second allows)"},
			&cli.IntFlag{Name: "worker-cores", Value: 8, Usage: "cores each worker announces"},
			&cli.IntFlag{Name: "worker-memory-mb", Value: 16384, Usage: "memory each worker announces"},
			&cli.Float64Flag{Name: "held-ratio", Value: 0.99, Usage: "share of the offered rate a held size must achieve"},
		}, rampFlags(3*time.Minute, " (each worker heartbeats as soon as it is registered)"), []cli.Flag{
			&cli.BoolFlag{Name: "api-probe", Usage: "during the window, every 100 ms: a status read (GET /v1/cluster?workers=false) and an app registered and killed, timed; with the master's scheduling-round p99 (its /metrics) and resident memory"},
			&cli.BoolFlag{Name: "listen", Value: true, Usage: "each simulated worker listens at its address; --listen=false registers the address without a listener, for fleets beyond the file descriptor limit (this measure sends the workers no command; as root, an nftables table of the run's own answers the master's probes of them, as live workers would)"},
		}),
		params: readHeartbeatParams,
		run:    runHeartbeats,
	}.command(out)
}

func runHeartbeats(ctx context.Context, cm *common, p *hbParams, r *Report) error {
	var rows []hbRow
	portBase := cm.portBase
	var firstErr error
	for step, w := range p.Workers {
		if ctx.Err() != nil {
			break
		}
		row, info, problems := heartbeatStep(ctx, cm, p, step, w, portBase)
		if cm.masterURL != "" {
			portBase += w // workers of earlier steps may still be listed there
		}
		if info.URL != "" {
			r.Masters = append(r.Masters, info)
			printMaster(cm.out, info)
		}
		fmt.Fprintf(cm.out, "  W=%d: registered in %.1fs; %.0f/s of %.0f/s offered, rtt p50 %.2f ms p99 %.2f ms, false expiries %d (ramp %d, window %d), not ALIVE %d, held %v\n",
			row.Workers, row.RegisterSeconds, row.AchievedPerSec, row.OfferedPerSec, row.RTT.P50, row.RTT.P99, row.FalseExpiries, row.RampExpiries, row.WindowExpiries, row.NotAlive, row.Held)
		for _, pr := range problems {
			r.Problems = append(r.Problems, fmt.Sprintf("W=%d: %s", w, pr))
		}
		if row.Err != "" && firstErr == nil {
			firstErr = fmt.Errorf("W=%d: %s", w, row.Err)
		}
		rows = append(rows, row)
	}
	r.Results = rows

	t := table{Name: "heartbeats", Title: "heartbeats (latency in ms; lag = from the scheduled time, incl. waiting for a request slot)",
		Header: []string{"workers", "interval", "offered/s", "held/s", "rtt p50", "p90", "p99", "max", "lag p99", "max gap", "gap/timeout", "errors", "false exp (ramp/window)", "not ALIVE", "master CPU%", "tool CPU%", "reg/s", "held"}}
	largest, all := 0, true
	for _, row := range rows {
		t.add(row.Workers, row.IntervalMs, row.OfferedPerSec, row.AchievedPerSec, row.RTT.P50, row.RTT.P90, row.RTT.P99, row.RTT.Max,
			row.Lag.P99, row.MaxGapMs, fmt.Sprintf("%.0f%%", 100*row.MaxGapOfTimeout), row.Errors,
			fmt.Sprintf("%d/%d", row.RampExpiries, row.WindowExpiries), row.NotAlive,
			cpuCell(row.MasterCPUPercent), cpuCell(row.ToolCPUPercent), row.RegistrationsSec, yesNo(row.Held))
		if row.Held && row.Workers > largest {
			largest = row.Workers
		}
		all = all && row.Held
	}
	r.Tables = append(r.Tables, t)
	if p.APIProbe {
		api := table{Name: "api", Title: "the API in the window (ms; every 100 ms a status read and an app registered and killed)",
			Header: []string{"workers", "status p50", "status p99", "submit p50", "submit p99", "kill p50", "kill p99", "errors", "round p99 ≤", "rounds", "master RSS MB"}}
		for _, row := range rows {
			if a := row.API; a != nil {
				api.add(row.Workers, a.Status.P50, a.Status.P99, a.Submit.P50, a.Submit.P99, a.Kill.P50, a.Kill.P99, a.Errors, a.RoundP99Ms, a.Rounds, a.MasterRSSMB)
			}
		}
		r.Tables = append(r.Tables, api)
	}
	switch {
	case len(rows) == 0:
	case largest == 0:
		r.Verdict = append(r.Verdict, "no size tried was held (see false expiries, errors and the achieved rate)")
	case all:
		r.Verdict = append(r.Verdict, fmt.Sprintf("every size tried was held; the largest, W=%d, is a lower bound of the limit", largest))
	default:
		r.Verdict = append(r.Verdict, fmt.Sprintf("largest W held with zero false expiry and the full rate: %d", largest))
	}
	return firstErr
}

// cpuCell shows a CPU share, or n/a when unknown (a master not started here).
func cpuCell(v float64) string {
	if v < 0 {
		return "n/a"
	}
	return cell(v)
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "NO"
}

// heartbeatStep measures one fleet size against its own master.
func heartbeatStep(ctx context.Context, cm *common, p *hbParams, step, workers, portBase int) (row hbRow, info MasterInfo, problems []string) {
	row = hbRow{Workers: workers, MasterCPUPercent: -1}
	fail := func(err error) (hbRow, MasterInfo, []string) {
		row.Err = err.Error()
		return row, info, append(problems, err.Error())
	}
	tgt, err := cm.openMaster(ctx, fmt.Sprintf("master-heartbeats-%d", workers), time.Duration(p.WorkerTimeout), 1)
	if err != nil {
		return fail(err)
	}
	info = tgt.Info
	problems = append(problems, tgt.warnings()...)
	mc := newMasterClient(tgt.URL, cm.secret, cm.inFlight, cm.reqTimeout)
	var f *fleet
	defer func() {
		ml := tgt.shutdown(mc, f)
		if ml != nil {
			row.MasterLog = ml
			row.MasterRemoved = ml.RemovedWorkers
			problems = append(problems, ml.problems(noSecretWarning)...)
			row.Held = row.Held && ml.RemovedWorkers == 0 && ml.Exit == "" && len(ml.Errors) == 0
		}
	}()
	f, err = newFleet(fleetConfig{
		Workers: workers, Cores: p.WorkerCores, MemoryMB: p.WorkerMemMB,
		IDPrefix: fmt.Sprintf("%s-s%d", cm.idPrefix, step), PortBase: portBase, Secret: cm.secret, Seed: cm.seed,
		NoListen: p.NoListen,
	}, mc)
	if err != nil {
		return fail(err)
	}
	if row.rampResult, err = f.ramp(ctx, p.rampParams); err != nil {
		row.FalseExpiries = f.n.reregistered.Load()
		problems = append(problems, fleetProblems(f)...)
		return fail(err)
	}
	interval := time.Duration(f.ws[0].interval.Load())
	timeout := time.Duration(p.WorkerTimeout)
	if tgt.proc == nil {
		timeout = 4 * interval // the master's own, as far as the worker can tell
	}
	row.IntervalMs = benchstat.Ms(interval)
	row.OfferedPerSec = benchstat.Rate(workers, interval)
	warmup := time.Duration(p.Warmup)
	if warmup == 0 {
		warmup = 2 * interval
	}
	if !poll.Sleep(ctx, warmup) {
		return fail(ctx.Err())
	}
	// The interval the workers keep now: heartbeat replies carry the
	// master's, which grows with the fleet while it registers.
	if iv := time.Duration(f.ws[0].interval.Load()); iv != interval {
		interval = iv
		row.IntervalMs = benchstat.Ms(interval)
		row.OfferedPerSec = benchstat.Rate(workers, interval)
		if tgt.proc == nil {
			timeout = 4 * interval
		}
	}
	cpu0, self0 := int64(-1), selfCPU()
	if tgt.proc != nil {
		cpu0 = tgt.proc.cpuTicks()
	}
	exp0 := f.n.reregistered.Load()
	f.hb.setOn(true)
	w0 := time.Now()
	var probe *apiProbe
	probeDone := make(chan struct{})
	probeCtx, stopProbe := context.WithCancel(ctx)
	if p.APIProbe {
		probe = &apiProbe{}
		go func() { defer close(probeDone); probe.run(probeCtx, mc) }()
	} else {
		close(probeDone)
	}
	ok := poll.Sleep(ctx, time.Duration(p.Duration))
	stopProbe()
	<-probeDone
	f.hb.setOn(false)
	if probe != nil {
		res := probe.result()
		res.RoundP99Ms, res.Rounds, _ = roundP99(ctx, mc)
		res.MasterRSSMB = -1
		if tgt.proc != nil {
			res.MasterRSSMB = rssMB(tgt.proc.proc.Pid())
		}
		row.API = &res
	}
	exp1 := f.n.reregistered.Load()
	window := time.Since(w0)
	end := time.Now()
	for _, w := range f.ws {
		f.hb.noteGap(end.Sub(time.Unix(0, w.lastOK.Load())), w.id)
	}
	if tgt.proc != nil && cpu0 >= 0 {
		if cpu1 := tgt.proc.cpuTicks(); cpu1 >= 0 {
			row.MasterCPUPercent = 100 * float64(cpu1-cpu0) / benchstat.ClockTicks / window.Seconds()
		}
	}
	row.ToolCPUPercent = 100 * (selfCPU() - self0).Seconds() / window.Seconds()
	if !ok {
		return fail(ctx.Err())
	}
	// Read the cluster while the heartbeats still run: every W must be ALIVE.
	cs, err := mc.cluster(ctx)
	if err != nil {
		return fail(fmt.Errorf("GET /v1/cluster: %w", err))
	}
	alive := 0
	for _, ws := range cs.Workers {
		if f.byID[ws.ID] != nil && ws.State == wire.WorkerAlive {
			alive++
		}
	}
	row.NotAlive = workers - alive

	f.hb.mu.Lock()
	row.WindowSeconds = window.Seconds()
	row.Heartbeats, row.Errors = f.hb.ok, f.hb.errs
	row.AchievedPerSec = benchstat.Rate(f.hb.ok, window)
	row.RTT, row.Lag = benchstat.Summarize(f.hb.rtt), benchstat.Summarize(f.hb.lag)
	row.MaxGapMs = benchstat.Ms(f.hb.maxGap)
	row.MaxGapOfTimeout = float64(f.hb.maxGap) / float64(timeout)
	f.hb.mu.Unlock()
	row.ErrorsTotal = f.n.hbErrors.Load()
	row.FalseExpiries = f.n.reregistered.Load()
	row.RampExpiries, row.WindowExpiries = exp0, exp1-exp0
	row.ReconnectCmds = f.n.reconnectCmds.Load()
	// Each worker's beats fall at its own phase, so a window may cut one
	// beat per worker off either edge: a short window at a small W would
	// otherwise miss the ratio by one beat (59 of 60 at W=5 for 3 s).
	expected := row.OfferedPerSec * window.Seconds()
	row.Held = row.FalseExpiries == 0 && row.NotAlive == 0 && row.ErrorsTotal == 0 &&
		float64(row.Heartbeats) >= p.HeldRatio*expected-float64(workers)
	row.Fleet = f.snapshot()
	problems = append(problems, fleetProblems(f)...)
	return row, info, problems
}

// noSecretWarning is what a master without a secret always logs.
const noSecretWarning = "no credentials (--tls-*-file, --secret-file): the API is unauthenticated, so it listens on loopback only"

// fleetProblems lists what went wrong on the workers' side.
func fleetProblems(f *fleet) []string {
	var out []string
	for _, c := range []struct {
		name string
		v    int64
	}{
		{"registration errors", f.n.regErrors.Load()},
		{"heartbeat errors", f.n.hbErrors.Load()},
		{"false expiries (re-registrations asked for)", f.n.reregistered.Load()},
		{"Reconnect commands", f.n.reconnectCmds.Load()},
		{"executor-state reports failed", f.n.stateErrors.Load()},
		{"commands refused: not strict JSON", f.n.badCommands.Load()},
		{"commands refused: stale epoch", f.n.staleRefused.Load()},
		{"duplicate launches", f.n.dupLaunches.Load()},
		{"kills of unknown executors", f.n.killsUnknown.Load()},
	} {
		if c.v > 0 {
			out = append(out, fmt.Sprintf("%s: %d", c.name, c.v))
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, n := range f.notes {
		out = append(out, "  "+strings.TrimSpace(n))
	}
	for kind, n := range f.noteKind {
		if n > 3 {
			out = append(out, fmt.Sprintf("  ... %d more of kind %q", n-3, kind))
		}
	}
	return out
}
