// Package failover is berthbench's measures of a berth cluster of real
// master and worker processes: how fast it fails over when its leader is
// killed or hands over (master-failover), and how many submissions a second
// it commits (submissions).
//
//	make build
//	berthbench master-failover --bin bin                          # kill and handover, defaults
//	berthbench master-failover --bin bin --scenario kill --rounds 30 --json kill.json
//	berthbench submissions --bin bin --count 2000 --concurrency 1,8,32
//
// Every process listens on 127.0.0.x and is stopped by pid at the end, also
// after an error or a Ctrl-C (and dies with the tool if it is killed).
package failover

import (
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/berth-cluster/berth/client"
)

const masterFailoverDescription = `Starts a cluster of real processes from --bin (build them with make build): 3
masters replicating through Raft on 127.0.0.1, .2 and .3 (free ports, temporary
data directories, --peers naming all three, one shared secret) and 10 workers
on 127.0.0.21... (2 cores, 1g each) listing every master. An app holds one
executor (sleep 3600) per worker, its client following the app's event stream
like a real driver, so that recovery also waits for an app client and the
executors are checked to survive every failover.

Scenarios (--scenario):
  kill      SIGKILL the leader. Timed from the signal, polling the surviving
            masters' GET /v1/cluster every --poll: a master names a new Raft
            leader; the new leader serves (Barrier, epoch bumped; RECOVERING);
            it is ALIVE with every worker ALIVE and the app's client back (the
            headline). The killed master is then restarted (same id, ports and
            data) and the next round waits until it is a caught-up follower.
  handover  SIGTERM the leader, which hands leadership over (Raft
            LeadershipTransfer) before it exits; timed the same way.
  steady    no fault: --steady-clients clients register and kill apps one
            after the other for --steady-duration while the workers heartbeat
            and the app's client follows its stream; every master is read
            once a second and any change of leader is counted (a Raft
            profile must elect only when it must: expect 0).

Rounds are --settle (6s) apart once the cluster is steady again: the app's
client (the client package, default options) reconnects at once only to a
stream that lived more than 5s, and backs off up to 2s otherwise.

Progress goes to stderr, the tables to stdout. The work directory (logs,
data) is removed at the end unless --keep, a round was slow (more than twice
the median and a second more than it, or --slow) or something failed: then
the merged logs of each slow round are in <work-dir>/slow/.`

const submissionsDescription = `Apps registered (POST /v1/apps, acknowledged only once committed) by C
concurrent clients, each with its own connection, for --count registrations
per concurrency: first through a fresh cluster of real processes from --bin
(build them with make build), 3 masters replicating through Raft on 127.0.0.1,
.2 and .3, with the Go client (which finds the leader once), then with plain
HTTP sent to a follower and redirected (307) every time, then through one
master in bolt mode with TLS and one without (the secret alone: Raft runs
only over TLS, so this is where TLS's cost shows). The apps ask for more memory than any worker has, so none
starts anything; after each batch they are killed (DELETE, timed too).

Progress goes to stderr, the tables to stdout. The work directory (logs,
data) is removed at the end unless --keep or something failed.`

// Commands are berthbench's subcommands of this package, in the order of
// its help.
func Commands(stdout, stderr io.Writer) []*cli.Command {
	return []*cli.Command{
		{
			Name:        "master-failover",
			Usage:       "kill the leader of a real 3-master cluster, or have it hand over: time until everything is back",
			UsageText:   "berthbench master-failover --bin DIR [options]",
			Description: masterFailoverDescription,
			Flags:       append(clusterFlags(), failoverFlags()...),
			Action:      action(stdout, stderr, failoverConfig),
		},
		{
			Name:        "submissions",
			Usage:       "register apps through a real 3-master cluster and a bolt master with and without TLS: commits per second",
			UsageText:   "berthbench submissions --bin DIR [options]",
			Description: submissionsDescription,
			Flags:       append(clusterFlags(), submissionFlags()...),
			Action:      action(stdout, stderr, submissionConfig),
		},
	}
}

// action runs a subcommand: the flags read by its own part of configure,
// then the run.
func action(stdout, stderr io.Writer, configure func(*cli.Context, *config)) cli.ActionFunc {
	return func(cx *cli.Context) error {
		if cx.NArg() > 0 {
			return fmt.Errorf("unexpected argument %q (flags only; see --help)", cx.Args().First())
		}
		cfg := clusterConfig(cx)
		configure(cx, cfg)
		if err := cfg.check(); err != nil {
			return err
		}
		return run(cx.Context, cfg, os.Args, stdout, stderr)
	}
}

// clusterFlags are the flags of both subcommands: the daemons, their
// cluster and the run.
func clusterFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "bin", Value: "bin", Usage: "directory holding the master and worker binaries (make build)"},
		&cli.IntFlag{Name: "masters", Value: 3, Usage: "masters (odd, 3 to 9)"},
		&cli.IntFlag{Name: "worker-cores", Value: 2, Usage: "cores each worker offers"},
		&cli.StringFlag{Name: "worker-memory", Value: "1g", Usage: "memory each worker offers"},
		&cli.IntFlag{Name: "raft-multiplier", Value: 1, Usage: "the masters' --raft-multiplier"},
		&cli.DurationFlag{Name: "worker-timeout", Usage: "the masters' --worker-timeout (default: theirs, 60s)"},
		&cli.DurationFlag{Name: "recovery-timeout", Usage: "the masters' --recovery-timeout (default: theirs, the worker timeout)"},
		&cli.StringFlag{Name: "log-level", Value: "info", Usage: "the daemons' --log-level"},
		&cli.StringSliceFlag{Name: "master-arg", Usage: "extra flag for every master, e.g. --master-arg=--placement=pack (repeatable)"},
		&cli.StringFlag{Name: "work-dir", Usage: "directory for data and logs (default: a new temporary one)"},
		&cli.BoolFlag{Name: "keep", Usage: "keep the work directory"},
		&cli.StringFlag{Name: "secret", EnvVars: []string{"BERTH_SECRET"}, Usage: "the cluster's secret (default: a random one)"},
		&cli.DurationFlag{Name: "max-time", Value: 30 * time.Minute, Usage: "hard bound on the whole run"},
		&cli.StringFlag{Name: "json", Usage: "also write the report as JSON to this file (- for stdout)"},
	}
}

func clusterConfig(cx *cli.Context) *config {
	return &config{
		bin: cx.String("bin"), dir: cx.String("work-dir"), keep: cx.Bool("keep"), secret: cx.String("secret"),
		masters: cx.Int("masters"), workerCores: cx.Int("worker-cores"), workerMemory: cx.String("worker-memory"),
		raftMultiplier: cx.Int("raft-multiplier"), workerTimeout: cx.Duration("worker-timeout"),
		recoveryTimeout: cx.Duration("recovery-timeout"), logLevel: cx.String("log-level"),
		masterExtra: cx.StringSlice("master-arg"), maxTime: cx.Duration("max-time"), jsonPath: cx.String("json"),
	}
}

func failoverFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringSliceFlag{Name: "scenario", Value: cli.NewStringSlice(scenarioKill, scenarioHandover), Usage: "scenarios to run, in order: kill, handover, steady (repeat or comma-separate)"},
		&cli.IntFlag{Name: "rounds", Value: 20, Usage: "failovers of the kill scenario"},
		&cli.IntFlag{Name: "handover-rounds", Value: 20, Usage: "failovers of the handover scenario"},
		&cli.DurationFlag{Name: "steady-duration", Value: 10 * time.Minute, Usage: "how long the steady scenario loads the cluster without a fault"},
		&cli.IntFlag{Name: "steady-clients", Value: 4, Usage: "clients registering and killing apps during the steady scenario"},
		&cli.IntFlag{Name: "workers", Value: 10, Usage: "workers of the failover cluster (1 to 200)"},
		&cli.IntFlag{Name: "executors", Value: -1, Usage: "executors of the long-running app, one core each (0: no app; default: one per worker)"},
		&cli.DurationFlag{Name: "poll", Value: 10 * time.Millisecond, Usage: "pause between two GET /v1/cluster of one master while timing a failover"},
		&cli.DurationFlag{Name: "round-timeout", Value: 2 * time.Minute, Usage: "give up on a failover after this long"},
		&cli.DurationFlag{Name: "settle", Value: 6 * time.Second, Usage: "pause once the cluster is steady, before the next round; keep it above 5s: the Go client takes an event stream that breaks within 5s of opening for a flapping master and backs off (up to 500ms) before reconnecting, which would measure the benchmark's cadence instead of a failover"},
		&cli.DurationFlag{Name: "slow", Usage: "keep the logs of rounds slower than this (default: more than twice the median and the median + 1s)"},
	}
}

func failoverConfig(cx *cli.Context, cfg *config) {
	cfg.workers, cfg.executors = cx.Int("workers"), cx.Int("executors")
	cfg.poll, cfg.roundTimeout = cx.Duration("poll"), cx.Duration("round-timeout")
	cfg.settle, cfg.slow = cx.Duration("settle"), cx.Duration("slow")
	cfg.rounds, cfg.handoverRounds = cx.Int("rounds"), cx.Int("handover-rounds")
	cfg.steadyDuration, cfg.steadyClients = cx.Duration("steady-duration"), cx.Int("steady-clients")
	for _, s := range cx.StringSlice("scenario") {
		// Split as berth's own lists of masters are (blanks dropped).
		for _, f := range client.SplitMasters(s) {
			if !slices.Contains(cfg.scenarios, f) {
				cfg.scenarios = append(cfg.scenarios, f)
			}
		}
	}
	if cfg.executors < 0 {
		cfg.executors = cfg.workers
	}
}

// submissionFlags keep, as aliases, the names they had as failoverbench's
// --scenario submit.
func submissionFlags() []cli.Flag {
	return []cli.Flag{
		&cli.IntFlag{Name: "count", Aliases: []string{"submit-count"}, Value: 2000, Usage: "timed registrations per concurrency"},
		&cli.IntSliceFlag{Name: "concurrency", Aliases: []string{"submit-concurrency"}, Value: cli.NewIntSlice(1, 8, 32), Usage: "concurrent clients (repeat or comma-separate)"},
		&cli.IntFlag{Name: "workers", Aliases: []string{"submit-workers"}, Usage: "workers of each cluster (the apps fit none anyway)"},
		&cli.BoolFlag{Name: "bolt", Aliases: []string{"submit-bolt"}, Value: true, Usage: "also measure one master in bolt mode"},
		&cli.BoolFlag{Name: "via-follower", Aliases: []string{"submit-via-follower"}, Value: true, Usage: "also measure plain HTTP redirected by a follower"},
	}
}

func submissionConfig(cx *cli.Context, cfg *config) {
	cfg.scenarios = []string{scenarioSubmit}
	cfg.submitCount, cfg.submitConcurrency = cx.Int("count"), cx.IntSlice("concurrency")
	cfg.submitWorkers = cx.Int("workers")
	cfg.submitBolt, cfg.submitViaFollower = cx.Bool("bolt"), cx.Bool("via-follower")
}
