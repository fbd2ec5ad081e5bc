// Command failoverbench measures how fast a berth cluster of real master and
// worker processes fails over, and how many submissions per second it
// commits.
//
//	make build
//	failoverbench --bin bin                                  # everything, defaults
//	failoverbench --bin bin --scenario kill --rounds 30 --json kill.json
//
// Every process listens on 127.0.0.x and is stopped by pid at the end, also
// after an error or a Ctrl-C (and dies with the tool if it is killed).
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"
)

const description = `Starts a cluster of real processes from --bin (build them with make build): 3
masters replicating through Raft on 127.0.0.1, .2 and .3 (free ports, temporary
data directories, --peers naming all three, one shared secret) and 10 workers
on 127.0.0.21... (2 cores, 1g each) listing every master. An app holds one
executor (sleep 3600) per worker, its client following the app's event stream
like a real driver, so that recovery also waits for an app client and the
executors are checked to survive every failover.

Scenarios:
  kill      SIGKILL the leader. Timed from the signal, polling the surviving
            masters' GET /v1/cluster every --poll: a master names a new Raft
            leader; the new leader serves (Barrier, epoch bumped; RECOVERING);
            it is ALIVE with every worker ALIVE and the app's client back (the
            headline). The killed master is then restarted (same id, ports and
            data) and the next round waits until it is a caught-up follower.
  handover  SIGTERM the leader, which hands leadership over (Raft
            LeadershipTransfer) before it exits; timed the same way.
  submit    apps registered (POST /v1/apps, acknowledged only once committed)
            by C concurrent clients, each with its own connection, for
            --submit-count registrations per concurrency: first through a
            fresh 3-master cluster with the Go client (which finds the leader
            once), then with plain HTTP sent to a follower and redirected
            (307) every time, then through one master in bolt mode. The apps
            ask for more memory than any worker has, so none starts anything;
            after each batch they are killed (DELETE, timed too).

Rounds are --settle (6s) apart once the cluster is steady again: the app's
client (the client package, default options) reconnects at once only to a
stream that lived more than 5s, and backs off up to 2s otherwise.

Progress goes to stderr, the tables to stdout. The work directory (logs,
data) is removed at the end unless --keep, a round was slow (more than twice
the median and a second more than it, or --slow) or something failed: then
the merged logs of each slow round are in <work-dir>/slow/.`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := newApp(os.Stdout, os.Stderr).RunContext(ctx, os.Args); err != nil {
		fmt.Fprintln(os.Stderr, "failoverbench:", err)
		os.Exit(1)
	}
}

// config is the parsed flags.
type config struct {
	bin               string
	dir               string // work directory
	keep              bool
	secret            string
	scenarios         []string
	masters           int
	workers           int
	workerCores       int
	workerMemory      string
	executors         int
	raftMultiplier    int
	workerTimeout     time.Duration // 0: the master's default
	recoveryTimeout   time.Duration // 0: the master's default
	logLevel          string
	masterExtra       []string
	poll              time.Duration
	roundTimeout      time.Duration
	settle            time.Duration
	slow              time.Duration
	rounds            int
	handoverRounds    int
	submitCount       int
	submitConcurrency []int
	submitWorkers     int
	submitBolt        bool
	submitViaFollower bool
	maxTime           time.Duration
	jsonPath          string
}

func (c *config) masterBin() string { return filepath.Join(c.bin, "master") }
func (c *config) workerBin() string { return filepath.Join(c.bin, "worker") }

// commonMasterArgs are the flags every master gets besides its identity.
func (c *config) commonMasterArgs() []string {
	args := []string{"--secret", c.secret}
	if c.workerTimeout > 0 {
		args = append(args, "--worker-timeout", c.workerTimeout.String())
	}
	if c.recoveryTimeout > 0 {
		args = append(args, "--recovery-timeout", c.recoveryTimeout.String())
	}
	args = append(args, "--log-level", c.logLevel)
	return append(args, c.masterExtra...)
}

func (c *config) has(scenario string) bool { return slices.Contains(c.scenarios, scenario) }

func newApp(stdout, stderr io.Writer) *cli.App {
	return &cli.App{
		Name:            "failoverbench",
		Usage:           "measure failover and commit throughput of a real berth cluster",
		UsageText:       "failoverbench --bin DIR [options]",
		Description:     description,
		HideHelpCommand: true,
		Writer:          stdout,
		ErrWriter:       stderr,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "bin", Value: "bin", Usage: "directory holding the master and worker binaries (make build)"},
			&cli.StringSliceFlag{Name: "scenario", Value: cli.NewStringSlice(scenarioKill, scenarioHandover, scenarioSubmit), Usage: "scenarios to run, in order: kill, handover, submit (repeat or comma-separate)"},
			&cli.IntFlag{Name: "rounds", Value: 20, Usage: "failovers of the kill scenario"},
			&cli.IntFlag{Name: "handover-rounds", Value: 20, Usage: "failovers of the handover scenario"},
			&cli.IntFlag{Name: "masters", Value: 3, Usage: "masters (odd, 3 to 9)"},
			&cli.IntFlag{Name: "workers", Value: 10, Usage: "workers of the failover cluster (1 to 200)"},
			&cli.IntFlag{Name: "worker-cores", Value: 2, Usage: "cores each worker offers"},
			&cli.StringFlag{Name: "worker-memory", Value: "1g", Usage: "memory each worker offers"},
			&cli.IntFlag{Name: "executors", Value: -1, Usage: "executors of the long-running app, one core each (0: no app; default: one per worker)"},
			&cli.IntFlag{Name: "raft-multiplier", Value: 1, Usage: "the masters' --raft-multiplier"},
			&cli.DurationFlag{Name: "worker-timeout", Usage: "the masters' --worker-timeout (default: theirs, 60s)"},
			&cli.DurationFlag{Name: "recovery-timeout", Usage: "the masters' --recovery-timeout (default: theirs, the worker timeout)"},
			&cli.StringFlag{Name: "log-level", Value: "info", Usage: "the daemons' --log-level"},
			&cli.StringSliceFlag{Name: "master-arg", Usage: "extra flag for every master, e.g. --master-arg=--placement=pack (repeatable)"},
			&cli.DurationFlag{Name: "poll", Value: 10 * time.Millisecond, Usage: "pause between two GET /v1/cluster of one master while timing a failover"},
			&cli.DurationFlag{Name: "round-timeout", Value: 2 * time.Minute, Usage: "give up on a failover after this long"},
			&cli.DurationFlag{Name: "settle", Value: 6 * time.Second, Usage: "pause once the cluster is steady, before the next round; keep it above 5s: the Go client takes an event stream that breaks within 5s of opening for a flapping master and backs off (up to 500ms) before reconnecting, which would measure the benchmark's cadence instead of a failover"},
			&cli.DurationFlag{Name: "slow", Usage: "keep the logs of rounds slower than this (default: more than twice the median and the median + 1s)"},
			&cli.IntFlag{Name: "submit-count", Value: 2000, Usage: "timed registrations per concurrency"},
			&cli.IntSliceFlag{Name: "submit-concurrency", Value: cli.NewIntSlice(1, 8, 32), Usage: "concurrent clients of the submit scenario (repeat or comma-separate)"},
			&cli.IntFlag{Name: "submit-workers", Usage: "workers of the submit clusters (the apps fit none anyway)"},
			&cli.BoolFlag{Name: "submit-bolt", Value: true, Usage: "also measure one master in bolt mode"},
			&cli.BoolFlag{Name: "submit-via-follower", Value: true, Usage: "also measure plain HTTP redirected by a follower"},
			&cli.StringFlag{Name: "work-dir", Usage: "directory for data and logs (default: a new temporary one)"},
			&cli.BoolFlag{Name: "keep", Usage: "keep the work directory"},
			&cli.StringFlag{Name: "secret", EnvVars: []string{"BERTH_SECRET"}, Usage: "the cluster's secret (default: a random one)"},
			&cli.DurationFlag{Name: "max-time", Value: 30 * time.Minute, Usage: "hard bound on the whole run"},
			&cli.StringFlag{Name: "json", Usage: "also write the report as JSON to this file (- for stdout)"},
		},
		Action: func(cx *cli.Context) error {
			cfg, err := configFrom(cx)
			if err != nil {
				return err
			}
			return run(cx.Context, cfg, os.Args, stdout, stderr)
		},
	}
}

func configFrom(cx *cli.Context) (*config, error) {
	if cx.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q (flags only; see --help)", cx.Args().First())
	}
	cfg := &config{
		bin: cx.String("bin"), dir: cx.String("work-dir"), keep: cx.Bool("keep"), secret: cx.String("secret"),
		masters: cx.Int("masters"), workers: cx.Int("workers"), workerCores: cx.Int("worker-cores"),
		workerMemory: cx.String("worker-memory"), executors: cx.Int("executors"),
		raftMultiplier: cx.Int("raft-multiplier"), workerTimeout: cx.Duration("worker-timeout"),
		recoveryTimeout: cx.Duration("recovery-timeout"), logLevel: cx.String("log-level"),
		masterExtra: cx.StringSlice("master-arg"), poll: cx.Duration("poll"), roundTimeout: cx.Duration("round-timeout"),
		settle: cx.Duration("settle"), slow: cx.Duration("slow"), rounds: cx.Int("rounds"),
		handoverRounds: cx.Int("handover-rounds"), submitCount: cx.Int("submit-count"),
		submitConcurrency: cx.IntSlice("submit-concurrency"), submitWorkers: cx.Int("submit-workers"),
		submitBolt: cx.Bool("submit-bolt"), submitViaFollower: cx.Bool("submit-via-follower"),
		maxTime: cx.Duration("max-time"), jsonPath: cx.String("json"),
	}
	for _, s := range cx.StringSlice("scenario") {
		for _, f := range strings.Split(s, ",") {
			if f = strings.TrimSpace(f); f != "" && !slices.Contains(cfg.scenarios, f) {
				cfg.scenarios = append(cfg.scenarios, f)
			}
		}
	}
	if cfg.executors < 0 {
		cfg.executors = cfg.workers
	}
	return cfg, cfg.check()
}

func (c *config) check() error {
	var errs []error
	for _, s := range c.scenarios {
		if s != scenarioKill && s != scenarioHandover && s != scenarioSubmit {
			errs = append(errs, fmt.Errorf("--scenario %q: want kill, handover or submit", s))
		}
	}
	if len(c.scenarios) == 0 {
		errs = append(errs, errors.New("--scenario: none given"))
	}
	if c.masters < 3 || c.masters > 9 || c.masters%2 == 0 {
		errs = append(errs, fmt.Errorf("--masters %d: want an odd number from 3 to 9 (a failover needs a quorum left)", c.masters))
	}
	if c.workers < 1 || c.workers > 200 {
		errs = append(errs, fmt.Errorf("--workers %d: want 1 to 200", c.workers))
	}
	if c.submitWorkers < 0 || c.submitWorkers > 200 {
		errs = append(errs, fmt.Errorf("--submit-workers %d: want 0 to 200", c.submitWorkers))
	}
	if c.workerCores < 1 {
		errs = append(errs, fmt.Errorf("--worker-cores %d: want at least 1", c.workerCores))
	}
	if c.executors > c.workers*c.workerCores {
		errs = append(errs, fmt.Errorf("--executors %d: the workers have %d cores", c.executors, c.workers*c.workerCores))
	}
	if c.rounds < 1 || c.rounds > 1000 || c.handoverRounds < 1 || c.handoverRounds > 1000 {
		errs = append(errs, errors.New("--rounds and --handover-rounds: want 1 to 1000"))
	}
	if c.submitCount < 1 || c.submitCount > 1_000_000 {
		errs = append(errs, fmt.Errorf("--submit-count %d: want 1 to 1000000", c.submitCount))
	}
	for _, n := range c.submitConcurrency {
		if n < 1 || n > 1024 {
			errs = append(errs, fmt.Errorf("--submit-concurrency %d: want 1 to 1024", n))
		}
	}
	if c.raftMultiplier < 1 || c.raftMultiplier > 10 {
		errs = append(errs, fmt.Errorf("--raft-multiplier %d: want 1 to 10", c.raftMultiplier))
	}
	if c.poll <= 0 || c.roundTimeout <= 0 || c.settle < 0 || c.maxTime <= 0 || c.workerTimeout < 0 || c.recoveryTimeout < 0 {
		errs = append(errs, errors.New("--poll, --round-timeout and --max-time must be positive; --settle and the timeouts not negative"))
	}
	abs, err := filepath.Abs(c.bin)
	if err != nil {
		errs = append(errs, err)
	}
	c.bin = abs
	for _, b := range []string{c.masterBin(), c.workerBin()} {
		if st, err := os.Stat(b); err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
			errs = append(errs, fmt.Errorf("--bin: no executable %s (run make build, or go build -o DIR/ ./cmd/master ./cmd/worker)", b))
		}
	}
	return errors.Join(errs...)
}

// run runs the scenarios, prints the report and removes the work directory
// unless it is worth keeping.
func run(ctx context.Context, cfg *config, argv []string, stdout, stderr io.Writer) error {
	temp := cfg.dir == ""
	ps := &procs{}
	defer ps.killAll() // whatever happened, nothing outlives the run
	rep, runErr := execute(ctx, cfg, ps, argv, func(s string) { fmt.Fprintln(stderr, s) })
	if rep == nil {
		return runErr
	}
	rep.print(stdout)
	if cfg.jsonPath != "" {
		if err := writeJSON(cfg.jsonPath, rep, stdout); err != nil {
			return errors.Join(runErr, err)
		}
	}
	if rep.WorkDir == "" && temp {
		os.RemoveAll(cfg.dir)
	}
	return runErr
}

// execute runs the scenarios with the processes in ps, all of them stopped
// when it returns. The report's WorkDir is set when the work directory is
// worth keeping (--keep, slow rounds, problems, an error).
func execute(ctx context.Context, cfg *config, ps *procs, argv []string, progress func(string)) (*Report, error) {
	started := time.Now()
	ctx, cancel := context.WithTimeout(ctx, cfg.maxTime)
	defer cancel()
	if cfg.secret == "" {
		b := make([]byte, 16)
		_, _ = rand.Read(b)
		cfg.secret = hex.EncodeToString(b)
	}
	var err error
	if cfg.dir == "" {
		if cfg.dir, err = os.MkdirTemp("", "failoverbench-"); err != nil {
			return nil, err
		}
	} else if err := os.MkdirAll(cfg.dir, 0o755); err != nil {
		return nil, err
	}
	if cfg.dir, err = filepath.Abs(cfg.dir); err != nil {
		return nil, err
	}
	defer ps.killAll()

	rep := &Report{Started: started, Command: argv, Machine: machine(cfg.masterBin(), cfg.dir), Settings: settings(cfg)}
	keep := cfg.keep
	runErr := func() error {
		if cfg.has(scenarioKill) || cfg.has(scenarioHandover) {
			if err := runFailoverCluster(ctx, cfg, ps, rep, progress); err != nil {
				return err
			}
		}
		if cfg.has(scenarioSubmit) {
			progress(fmt.Sprintf("submit: %d registrations at concurrency %v", cfg.submitCount, cfg.submitConcurrency))
			res, infos, notes, err := runSubmit(ctx, cfg, ps, progress)
			rep.Submit, rep.Clusters, rep.Notes = res, append(rep.Clusters, infos...), append(rep.Notes, notes...)
			rep.Ratios = ratios(res)
			return err
		}
		return nil
	}()
	ps.killAll()
	if runErr != nil {
		rep.Error = runErr.Error()
		keep = true
	}
	for _, f := range rep.Failovers {
		if len(f.Slow) > 0 || len(f.Problems) > 0 {
			keep = true
		}
	}
	if rep.App != nil && len(rep.App.Incidents) > 0 {
		keep = true
	}
	if keep {
		rep.WorkDir = cfg.dir
	}
	rep.Seconds = time.Since(started).Seconds()
	rep.Machine.LoadEnd = loadAverage()
	return rep, runErr
}

// runFailoverCluster starts the failover cluster, runs the kill and
// handover scenarios on it and stops it.
func runFailoverCluster(ctx context.Context, cfg *config, ps *procs, rep *Report, progress func(string)) error {
	cl, err := newCluster("failover", cfg, ps, cfg.dir)
	if err != nil {
		return err
	}
	defer func() { rep.Notes = append(rep.Notes, cl.stop()...) }()
	progress(fmt.Sprintf("starting %d masters and %d workers in %s", cfg.masters, cfg.workers, cfg.dir))
	if err := cl.startRaftMasters(ctx, cfg.masters); err != nil {
		return err
	}
	if err := cl.startWorkers(ctx, cfg.workers); err != nil {
		return err
	}
	if cfg.executors > 0 {
		if err := cl.startApp(ctx); err != nil {
			return err
		}
	}
	rep.Clusters = append(rep.Clusters, cl.info())
	defer func() {
		if cl.app == nil {
			return
		}
		counts, incidents := cl.app.snapshot()
		ar := &AppReport{ID: cl.app.id, Executors: cfg.executors, Events: map[string]int{}, Incidents: incidents}
		for k, v := range counts {
			ar.Events[string(k)] = v
		}
		if ar.Incidents == nil {
			ar.Incidents = []string{}
		}
		rep.App = ar
	}()
	for _, sc := range cfg.scenarios {
		rounds := cfg.rounds
		switch sc {
		case scenarioKill:
		case scenarioHandover:
			rounds = cfg.handoverRounds
		default:
			continue
		}
		progress(fmt.Sprintf("%s: %d rounds", sc, rounds))
		rs, err := runFailovers(ctx, cl, sc, rounds, progress)
		fs := summarizeRounds(sc, rs)
		fs.Slow = keepSlowRounds(cl, rs, cfg.slow)
		rep.Failovers, rep.Rounds = append(rep.Failovers, fs), append(rep.Rounds, rs...)
		if err != nil {
			return err
		}
	}
	return nil
}

// settings are the parameters worth printing with the results.
func settings(cfg *config) map[string]string {
	orDefault := func(d time.Duration, def string) string {
		if d == 0 {
			return def
		}
		return d.String()
	}
	conc := make([]string, len(cfg.submitConcurrency))
	for i, n := range cfg.submitConcurrency {
		conc[i] = strconv.Itoa(n)
	}
	out := map[string]string{
		"scenarios":       strings.Join(cfg.scenarios, ","),
		"master timeouts": fmt.Sprintf("--raft-multiplier %d, --worker-timeout %s, --recovery-timeout %s", cfg.raftMultiplier, orDefault(cfg.workerTimeout, "default (60s)"), orDefault(cfg.recoveryTimeout, "default (= worker timeout)")),
	}
	if cfg.has(scenarioKill) || cfg.has(scenarioHandover) {
		app := "no app"
		if cfg.executors > 0 {
			app = fmt.Sprintf("an app with %d executors (sleep 3600, 1 core, 64 MiB) and a client on its event stream", cfg.executors)
		}
		out["failover cluster"] = fmt.Sprintf("%d masters (Raft), %d workers × %d cores × %s, %s", cfg.masters, cfg.workers, cfg.workerCores, cfg.workerMemory, app)
		out["rounds"] = fmt.Sprintf("kill %d, handover %d; poll every %s, settle %s, round timeout %s", cfg.rounds, cfg.handoverRounds, cfg.poll, cfg.settle, cfg.roundTimeout)
	}
	if cfg.has(scenarioSubmit) {
		out["submit"] = fmt.Sprintf("%d registrations per concurrency (%s), %d workers, bolt %v, via follower %v", cfg.submitCount, strings.Join(conc, ","), cfg.submitWorkers, cfg.submitBolt, cfg.submitViaFollower)
	}
	return out
}
