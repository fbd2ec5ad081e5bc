// Package sparkcmp is berthbench's comparison of berth with Spark
// standalone, both running the same real Spark jobs from one pinned Spark
// (the pyspark wheel's jars, bin/spark-submit and bin/spark-class): start-up,
// a worker's loss, a master's failover, fragmentation and a burst of apps,
// alternating the two systems round by round in one run (issue 32).
//
//	make build bench-tools
//	export SPARK_HOME=$(scripts/spark-deps.sh)
//	berthbench spark-vs-standalone --bin bin --out out/spark-vs-standalone.md
//
// Every process listens on 127.0.0.100-140, ports 18000-18999, and is
// ended by pid (what a Spark Worker started too), also after an error or a
// Ctrl-C; the daemons die with the tool if it is killed.
package sparkcmp

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"
)

const description = `Starts two clusters side by side on 127.0.0.100-140 (ports 18000-18999), the
same workers for both (--workers, --worker-cores, --worker-memory):

  Spark standalone  ZooKeeper (the wheel's own jars: ZooKeeperServerMain), two
                    Masters with spark.deploy.recoveryMode=ZOOKEEPER (one
                    active, one standby), the Workers; spark-class with the
                    flags a user gives, settings in SPARK_CONF_DIR's
                    spark-defaults.conf (spark.worker.timeout = --worker-timeout)
  berth             three Raft masters (--worker-timeout, --min-core-unit) and
                    the workers, from --bin; Spark's jobs reach them through
                    --bin/berth-spark.jar (spark+berth://)

then runs one Java application (compiled here against SPARK_HOME/jars) through
spark-submit on both, an untimed one first on each (--warmup), then the
measures, alternating berth and Spark in every round:

  startup        spark-submit to N one-core executors registered (--executors)
                 and a short job
  worker-loss    a worker and its executors lost under a job, by SIGKILL (kill:
                 the kernel closes their sockets, which Spark's Master sees at
                 once) and by SIGSTOP (freeze: silent, as a dead machine):
                 time until the driver has N executors again, the job against
                 an undisturbed run
  failover       kill -9 (kill) or SIGTERM (term) of the active master with a
                 job running: does it finish, and the time until a new app,
                 submitted again and again from the signal on, gets an executor
  fragmentation  an app without spark.executor.cores, then with it, losing the
                 worker holding most of its cores: the replacements' sizes
  burst          --burst-apps apps, --burst-concurrency spark-submits at a time:
                 apps per second, the active master's CPU time and peak RSS

The report (markdown: the machine, both versions, every daemon's command line
and settings, p50/p90/max per system and berth/Spark, the goals of issue 32)
goes to stdout and --out; progress to stderr. The work directory is removed
unless --keep, --work-dir, an error or a problem.`

// Commands is berthbench's subcommand of this package.
func Commands(stdout, stderr io.Writer) []*cli.Command {
	return []*cli.Command{{
		Name:        "spark-vs-standalone",
		Usage:       "berth against Spark standalone with the same Spark jobs, side by side: start-up, worker loss, failover, fragmentation, a burst",
		UsageText:   "berthbench spark-vs-standalone --bin DIR --spark-home DIR [options]",
		Description: description,
		Flags:       flags(),
		Action: func(cx *cli.Context) error {
			if cx.NArg() > 0 {
				return fmt.Errorf("unexpected argument %q (flags only; see --help)", cx.Args().First())
			}
			cfg, err := configFrom(cx)
			if err != nil {
				return err
			}
			if err := cfg.check(); err != nil {
				return err
			}
			return run(cx.Context, cfg, os.Args, stdout, stderr)
		},
	}}
}

func flags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "bin", Value: "bin", Usage: "directory of berth's master, worker and berth-spark.jar (make build)"},
		&cli.StringFlag{Name: "spark-home", EnvVars: []string{"SPARK_HOME"}, Usage: "the pinned Spark (export SPARK_HOME=$(scripts/spark-deps.sh))"},
		&cli.StringFlag{Name: "work-dir", Usage: "directory for data and logs (default: a new temporary one, removed unless a problem)"},
		&cli.BoolFlag{Name: "keep", Usage: "keep the work directory"},
		&cli.StringFlag{Name: "out", Usage: "also write the report to this file"},
		&cli.StringFlag{Name: "measures", Value: strings.Join(allMeasures, ","), Usage: "measures to run, comma-separated, in this order: " + strings.Join(allMeasures, ", ")},
		&cli.IntFlag{Name: "rounds", Value: 5, Usage: "rounds of startup and worker-loss (each runs berth then Spark)"},
		&cli.IntFlag{Name: "failover-rounds", Value: 5, Usage: "rounds of each failover scenario"},
		&cli.IntFlag{Name: "fragmentation-rounds", Value: 1, Usage: "rounds of each fragmentation case (both systems decide alike every time)"},
		&cli.IntFlag{Name: "burst-rounds", Value: 1, Usage: "rounds of the burst (one of 200 apps takes about an hour a system on 2 cores)"},
		&cli.IntFlag{Name: "workers", Value: 4, Usage: "workers of each system (2 to 8)"},
		&cli.IntFlag{Name: "worker-cores", Value: 8, Usage: "cores each worker offers"},
		&cli.StringFlag{Name: "worker-memory", Value: "8g", Usage: "memory each worker offers"},
		&cli.StringFlag{Name: "executor-memory", Value: "512m", Usage: "spark.executor.memory of every app (Spark's least)"},
		&cli.StringFlag{Name: "java-options", Usage: "more JVM options for every driver and executor of both systems (spark.driver/executor.extraJavaOptions; default none)"},
		&cli.DurationFlag{Name: "worker-timeout", Value: 10 * time.Second, Usage: "spark.worker.timeout and berth's --worker-timeout (whole seconds)"},
		&cli.DurationFlag{Name: "zk-tick-time", Value: 2 * time.Second, Usage: "ZooKeeper's tickTime (its sample's; a session lasts at most 20 ticks)"},
		&cli.IntFlag{Name: "min-core-unit", Value: 4, Usage: "berth's masters' --min-core-unit (apps fixing spark.executor.cores are not concerned)"},
		&cli.StringFlag{Name: "executors", Value: "2,8,32", Usage: "startup: N, one-core executors, comma-separated"},
		&cli.StringFlag{Name: "loss-modes", Value: lossKill + "," + lossFreeze, Usage: "worker-loss: kill (SIGKILL: the kernel closes the worker's sockets), freeze (SIGSTOP: they stay open and silent, as a dead machine's), comma-separated"},
		&cli.IntFlag{Name: "loss-executors", Value: 8, Usage: "worker-loss: executors of the app"},
		&cli.IntFlag{Name: "loss-tasks", Value: 80, Usage: "worker-loss: tasks of its job"},
		&cli.DurationFlag{Name: "loss-kill-after", Value: 4 * time.Second, Usage: "worker-loss: from the job's start to the kill"},
		&cli.DurationFlag{Name: "task-time", Value: 2 * time.Second, Usage: "how long each task of the worker-loss and failover jobs sleeps"},
		&cli.StringFlag{Name: "failover-scenarios", Value: scenarioKill + "," + scenarioTerm, Usage: "failover: kill (SIGKILL), term (SIGTERM), comma-separated"},
		&cli.IntFlag{Name: "failover-executors", Value: 4, Usage: "failover: executors of the running app"},
		&cli.IntFlag{Name: "failover-tasks", Value: 120, Usage: "failover: tasks of its job (by default a minute of it, longer than Spark's failover)"},
		&cli.DurationFlag{Name: "failover-kill-after", Value: 3 * time.Second, Usage: "failover: from the job's start to the signal"},
		&cli.DurationFlag{Name: "failover-timeout", Value: 5 * time.Minute, Usage: "failover: give up on a new app's executor after this long"},
		&cli.IntFlag{Name: "failover-attempts", Value: 20, Usage: "failover: at most this many spark-submits of the new app"},
		&cli.StringFlag{Name: "fragmentation-cases", Value: fragUnset + "," + fragFixed, Usage: "fragmentation: unset (no spark.executor.cores), fixed (--fragmentation-executor-cores), comma-separated"},
		&cli.IntFlag{Name: "fragmentation-cores", Value: 12, Usage: "fragmentation: spark.cores.max of the app"},
		&cli.IntFlag{Name: "fragmentation-executor-cores", Value: 4, Usage: "fragmentation: its spark.executor.cores in the second case"},
		&cli.IntFlag{Name: "burst-apps", Value: 200, Usage: "burst: applications submitted"},
		&cli.IntFlag{Name: "burst-concurrency", Value: 4, Usage: "burst: spark-submits running at once"},
		&cli.DurationFlag{Name: "burst-idle", Value: time.Minute, Usage: "burst: read the active master's idle CPU time over this long before it (10 s was too short to read an idle rate)"},
		&cli.BoolFlag{Name: "warmup", Value: true, Usage: "first run one untimed app on each system, so that neither pays for cold caches"},
		&cli.DurationFlag{Name: "app-timeout", Value: 5 * time.Minute, Usage: "bound on one app's life"},
		&cli.DurationFlag{Name: "max-time", Value: 6 * time.Hour, Usage: "bound on the whole run (the defaults take about 3.5 hours on 2 cores)"},
	}
}

func configFrom(cx *cli.Context) (*config, error) {
	cfg := &config{
		bin: cx.String("bin"), sparkHome: cx.String("spark-home"), dir: cx.String("work-dir"), keep: cx.Bool("keep"), out: cx.String("out"),
		rounds: cx.Int("rounds"), failoverRounds: cx.Int("failover-rounds"), fragmentationRounds: cx.Int("fragmentation-rounds"), burstRounds: cx.Int("burst-rounds"),
		workers: cx.Int("workers"), workerCores: cx.Int("worker-cores"), workerMemory: cx.String("worker-memory"), executorMemory: cx.String("executor-memory"), javaOptions: cx.String("java-options"),
		workerTimeout: cx.Duration("worker-timeout"), zkTickTime: cx.Duration("zk-tick-time"), minCoreUnit: cx.Int("min-core-unit"),
		lossExecutors: cx.Int("loss-executors"), lossTasks: cx.Int("loss-tasks"), lossKillAfter: cx.Duration("loss-kill-after"), taskTime: cx.Duration("task-time"),
		failoverExecutors: cx.Int("failover-executors"), failoverTasks: cx.Int("failover-tasks"), failoverKillAfter: cx.Duration("failover-kill-after"),
		failoverTimeout: cx.Duration("failover-timeout"), failoverAttempts: cx.Int("failover-attempts"),
		fragmentationCores: cx.Int("fragmentation-cores"), fragmentationExecutorCores: cx.Int("fragmentation-executor-cores"),
		burstApps: cx.Int("burst-apps"), burstConcurrency: cx.Int("burst-concurrency"), burstIdle: cx.Duration("burst-idle"),
		warmup: cx.Bool("warmup"), appTimeout: cx.Duration("app-timeout"), maxTime: cx.Duration("max-time"),
	}
	cfg.measures = splitList(cx.String("measures"))
	cfg.failoverScenarios = splitList(cx.String("failover-scenarios"))
	cfg.lossModes = splitList(cx.String("loss-modes"))
	cfg.fragmentationCases = splitList(cx.String("fragmentation-cases"))
	for _, s := range splitList(cx.String("executors")) {
		n, err := strconv.Atoi(s)
		if err != nil {
			return nil, fmt.Errorf("--executors %q: want numbers, comma-separated", s)
		}
		if !slices.Contains(cfg.startupExecutors, n) {
			cfg.startupExecutors = append(cfg.startupExecutors, n)
		}
	}
	return cfg, nil
}

// splitList splits a comma-separated flag, blanks dropped, each once.
func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" && !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	return out
}
