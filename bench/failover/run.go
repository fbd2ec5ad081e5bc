package failover

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/berth-cluster/berth/bench/internal/benchtool"
)

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
		cfg.secret = benchtool.Secret()
	}
	var err error
	if cfg.dir == "" {
		if cfg.dir, err = os.MkdirTemp("", "berthbench-"); err != nil {
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
		if cfg.failovers() {
			if err := runFailoverCluster(ctx, cfg, ps, rep, progress); err != nil {
				return err
			}
		}
		if cfg.has(scenarioSubmit) {
			progress(fmt.Sprintf("submit: %d registrations at concurrency %v", cfg.submitCount, cfg.submitConcurrency))
			res, infos, notes, err := runSubmit(ctx, cfg, ps, progress)
			rep.Submit, rep.Clusters, rep.Notes = res, append(rep.Clusters, infos...), append(rep.Notes, notes...)
			rep.Ratios, rep.TLSCost = ratios(res), tlsCosts(res)
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
		case scenarioSteady:
			progress(fmt.Sprintf("steady: %d clients for %s", cfg.steadyClients, cfg.steadyDuration))
			if _, _, err := cl.steady(ctx, 2*time.Minute, cfg.executors > 0); err != nil {
				return err
			}
			st, err := cl.stability(ctx, cfg.steadyDuration, cfg.steadyClients, progress)
			rep.Stability = &st
			if err != nil {
				return err
			}
			continue
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
