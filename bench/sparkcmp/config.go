package sparkcmp

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// The measures, in the order they run.
const (
	measureStartup       = "startup"
	measureWorkerLoss    = "worker-loss"
	measureFailover      = "failover"
	measureFragmentation = "fragmentation"
	measureBurst         = "burst"
)

var allMeasures = []string{measureStartup, measureWorkerLoss, measureFailover, measureFragmentation, measureBurst}

// The failover scenarios: how the active master is stopped.
const (
	scenarioKill = "kill" // SIGKILL
	scenarioTerm = "term" // SIGTERM: a graceful stop
)

// config is the parsed flags.
type config struct {
	bin, sparkHome, dir string
	keep                bool
	out                 string // the report's file besides stdout ("" none)
	measures            []string

	rounds, failoverRounds, fragmentationRounds, burstRounds int

	workers, workerCores int
	workerMemory         string // both systems' workers offer this (e.g. 8g)
	executorMemory       string // spark.executor.memory of every app
	javaOptions          string // more JVM options of every driver and executor, both systems ("" none)
	workerTimeout        time.Duration
	zkTickTime           time.Duration // ZooKeeper's tickTime: its sessions last at most 20 ticks
	minCoreUnit          int           // berth's masters' --min-core-unit

	startupExecutors []int // N of the start-up measure

	lossModes     []string      // how a worker is lost: kill, freeze
	lossExecutors int           // executors of the worker-loss app
	lossTasks     int           // its job's tasks
	lossKillAfter time.Duration // from its job's start to the kill
	taskTime      time.Duration // how long each task of the long jobs sleeps

	failoverScenarios []string
	failoverExecutors int
	failoverTasks     int
	failoverKillAfter time.Duration
	failoverTimeout   time.Duration // bound on waiting for a new app's executor
	failoverAttempts  int           // bound on the new app's spark-submits

	fragmentationCases         []string // unset, fixed: without and with spark.executor.cores
	fragmentationCores         int      // spark.cores.max of the fragmentation app
	fragmentationExecutorCores int      // its spark.executor.cores in the second case

	burstApps, burstConcurrency int
	burstIdle                   time.Duration // the window the active master's idle CPU time is read over

	warmup     bool          // one untimed app per system before the measures
	appTimeout time.Duration // bound on one app's whole life
	maxTime    time.Duration // bound on the whole run
}

func (c *config) masterBin() string { return filepath.Join(c.bin, "master") }
func (c *config) workerBin() string { return filepath.Join(c.bin, "worker") }
func (c *config) pluginJar() string { return filepath.Join(c.bin, "berth-spark.jar") }

func (c *config) has(measure string) bool { return slices.Contains(c.measures, measure) }

// check validates the flags and makes the paths absolute.
func (c *config) check() error {
	var errs []error
	for _, m := range c.measures {
		if !slices.Contains(allMeasures, m) {
			errs = append(errs, fmt.Errorf("--measures %q: want some of %v", m, allMeasures))
		}
	}
	if len(c.measures) == 0 {
		errs = append(errs, errors.New("--measures: none given"))
	}
	for _, m := range c.lossModes {
		if m != lossKill && m != lossFreeze {
			errs = append(errs, fmt.Errorf("--loss-modes %q: want kill or freeze", m))
		}
	}
	if c.has(measureWorkerLoss) && len(c.lossModes) == 0 {
		errs = append(errs, errors.New("--loss-modes: none given"))
	}
	for _, fc := range c.fragmentationCases {
		if fc != fragUnset && fc != fragFixed {
			errs = append(errs, fmt.Errorf("--fragmentation-cases %q: want unset or fixed", fc))
		}
	}
	if c.has(measureFragmentation) && len(c.fragmentationCases) == 0 {
		errs = append(errs, errors.New("--fragmentation-cases: none given"))
	}
	for _, s := range c.failoverScenarios {
		if s != scenarioKill && s != scenarioTerm {
			errs = append(errs, fmt.Errorf("--failover-scenarios %q: want kill or term", s))
		}
	}
	for _, n := range []struct {
		name     string
		v, lo, h int
	}{
		{"rounds", c.rounds, 1, 100}, {"failover-rounds", c.failoverRounds, 1, 100},
		{"fragmentation-rounds", c.fragmentationRounds, 1, 100}, {"burst-rounds", c.burstRounds, 1, 100},
		{"workers", c.workers, 2, maxWorkers}, {"worker-cores", c.workerCores, 1, 256},
		{"loss-executors", c.lossExecutors, 1, 256}, {"loss-tasks", c.lossTasks, 1, 100_000},
		{"failover-executors", c.failoverExecutors, 1, 256}, {"failover-tasks", c.failoverTasks, 1, 100_000},
		{"failover-attempts", c.failoverAttempts, 1, 100}, {"min-core-unit", c.minCoreUnit, 1, 256},
		{"fragmentation-cores", c.fragmentationCores, 1, 4096}, {"fragmentation-executor-cores", c.fragmentationExecutorCores, 1, 256},
		{"burst-apps", c.burstApps, 1, 10_000}, {"burst-concurrency", c.burstConcurrency, 1, 64},
	} {
		if n.v < n.lo || n.v > n.h {
			errs = append(errs, fmt.Errorf("--%s %d: want %d to %d", n.name, n.v, n.lo, n.h))
		}
	}
	cores := c.workers * c.workerCores
	if c.has(measureStartup) {
		for _, n := range c.startupExecutors {
			if n < 1 || n > cores {
				errs = append(errs, fmt.Errorf("--executors %d: want 1 to the workers' %d cores", n, cores))
			}
		}
		if len(c.startupExecutors) == 0 {
			errs = append(errs, errors.New("--executors: none given"))
		}
	}
	// After a worker's loss its executors must fit on the others.
	left := (c.workers - 1) * c.workerCores
	if c.has(measureWorkerLoss) && c.lossExecutors > left {
		errs = append(errs, fmt.Errorf("--loss-executors %d: must fit on %d workers less one (%d cores)", c.lossExecutors, c.workers, left))
	}
	if c.has(measureFragmentation) && c.fragmentationCores > left {
		errs = append(errs, fmt.Errorf("--fragmentation-cores %d: must fit on %d workers less one (%d cores)", c.fragmentationCores, c.workers, left))
	}
	if c.has(measureFailover) && c.failoverExecutors+1 > cores {
		errs = append(errs, fmt.Errorf("--failover-executors %d: it and the new app's executor must fit on the workers' %d cores", c.failoverExecutors, cores))
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"worker-timeout", c.workerTimeout}, {"zk-tick-time", c.zkTickTime}, {"task-time", c.taskTime},
		{"loss-kill-after", c.lossKillAfter}, {"failover-kill-after", c.failoverKillAfter},
		{"failover-timeout", c.failoverTimeout}, {"burst-idle", c.burstIdle}, {"app-timeout", c.appTimeout}, {"max-time", c.maxTime},
	} {
		if d.v <= 0 {
			errs = append(errs, fmt.Errorf("--%s must be positive", d.name))
		}
	}
	if c.workerTimeout%time.Second != 0 {
		errs = append(errs, fmt.Errorf("--worker-timeout %s: want whole seconds (Spark's spark.worker.timeout is in seconds)", c.workerTimeout))
	}
	if c.zkTickTime%time.Millisecond != 0 {
		errs = append(errs, fmt.Errorf("--zk-tick-time %s: want whole milliseconds", c.zkTickTime))
	}
	if c.sparkHome == "" {
		errs = append(errs, errors.New("--spark-home (or SPARK_HOME): none given (export SPARK_HOME=$(scripts/spark-deps.sh))"))
	}
	var err error
	if c.bin, err = filepath.Abs(c.bin); err != nil {
		errs = append(errs, err)
	}
	if c.sparkHome, err = filepath.Abs(c.sparkHome); err != nil {
		errs = append(errs, err)
	}
	for _, f := range []string{c.masterBin(), c.workerBin()} {
		if st, err := os.Stat(f); err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
			errs = append(errs, fmt.Errorf("--bin: no executable %s (make build)", f))
		}
	}
	if _, err := os.Stat(c.pluginJar()); err != nil {
		errs = append(errs, fmt.Errorf("--bin: no %s, berth's Spark plugin (make build)", c.pluginJar()))
	}
	for _, f := range []string{"bin/spark-submit", "bin/spark-class", "jars"} {
		if _, err := os.Stat(filepath.Join(c.sparkHome, f)); err != nil {
			errs = append(errs, fmt.Errorf("--spark-home %s has no %s", c.sparkHome, f))
		}
	}
	return errors.Join(errs...)
}
