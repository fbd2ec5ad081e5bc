package sparkcmp

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/berth-cluster/berth/bench/internal/benchstat"
)

// run starts both clusters, runs the measures, stops everything it
// started and prints the report (also after an error: what was measured).
func run(ctx context.Context, cfg *config, argv []string, stdout, stderr io.Writer) error {
	_, err := compare(ctx, cfg, argv, stdout, stderr)
	return err
}

// compare is run, returning the report too (nil if nothing was started).
func compare(ctx context.Context, cfg *config, argv []string, stdout, stderr io.Writer) (*report, error) {
	ctx, cancel := context.WithTimeout(ctx, cfg.maxTime)
	defer cancel()
	progress := func(format string, args ...any) {
		fmt.Fprintf(stderr, "%s %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
	}
	temp := cfg.dir == ""
	var err error
	if temp {
		cfg.dir, err = os.MkdirTemp("", "berthbench-spark-")
	} else {
		err = os.MkdirAll(cfg.dir, 0o755)
	}
	if err != nil {
		return nil, err
	}
	if cfg.dir, err = filepath.Abs(cfg.dir); err != nil {
		return nil, err
	}
	if err := checkAddressesFree(fixedAddresses(cfg.workers)); err != nil {
		return nil, err
	}
	ps := &procs{}
	defer ps.killAll() // whatever happened, nothing outlives the run

	rep := &report{results: newResults(), started: time.Now(), command: argv, host: benchstat.DescribeHost(),
		loadStart: benchstat.LoadAverage(), workDir: cfg.dir, daemons: map[string][]string{}, launches: map[string][]string{}}
	rep.berthVersion = berthVersion(ctx, cfg)
	rep.sparkVersion = sparkVersion(ctx, cfg)
	rep.javaVersion = javaVersion(ctx)
	h := &harness{cfg: cfg, ps: ps, dir: cfg.dir, rep: rep, progress: progress, examples: map[string]string{}, hostCores: runtime.NumCPU()}

	runErr := h.execute(ctx)
	stopErr := h.stop()
	rep.ended, rep.loadEnd = time.Now(), benchstat.LoadAverage()
	h.describeClusters()
	rep.timeouts = timeouts(cfg)
	rep.evaluateGoals(cfg)
	rep.print(stdout)
	var writeErr error
	if cfg.out != "" {
		var b strings.Builder
		rep.print(&b)
		writeErr = os.WriteFile(cfg.out, []byte(b.String()), 0o644)
	}
	if cfg.keep || !temp || runErr != nil || rep.problems() > 0 {
		progress("logs and data kept in %s", cfg.dir)
	} else {
		os.RemoveAll(cfg.dir)
	}
	return rep, errors.Join(runErr, stopErr, writeErr)
}

// execute builds the driver application, starts both clusters and runs
// the measures asked for, in their order.
func (h *harness) execute(ctx context.Context) error {
	h.progress("compiling the driver application against %s/jars", h.cfg.sparkHome)
	var err error
	if h.jar, err = buildDriver(ctx, h.cfg.sparkHome, h.dir); err != nil {
		return err
	}
	h.props = filepath.Join(h.dir, "driver.properties")
	if err := os.WriteFile(h.props, []byte(driverProperties(h.cfg)), 0o644); err != nil {
		return err
	}
	h.progress("starting Spark standalone: ZooKeeper, %d Masters, %d Workers", sparkMasters, h.cfg.workers)
	if h.spark, err = startSpark(ctx, h.cfg, h.ps, filepath.Join(h.dir, "spark")); err != nil {
		return fmt.Errorf("starting Spark standalone: %w", err)
	}
	h.progress("starting berth: %d masters, %d workers", berthMasters, h.cfg.workers)
	if h.berth, err = startBerth(ctx, h.cfg, h.ps, filepath.Join(h.dir, "berth")); err != nil {
		return fmt.Errorf("starting berth: %w", err)
	}
	if h.cfg.warmup {
		if err := h.warmUp(ctx); err != nil {
			return err
		}
	}
	measures := map[string]func(context.Context){
		measureStartup: h.startup, measureWorkerLoss: h.workerLoss, measureFailover: h.failover,
		measureFragmentation: h.fragmentation, measureBurst: h.burst,
	}
	for _, m := range allMeasures {
		if h.cfg.has(m) && ctx.Err() == nil {
			h.progress("measure %s", m)
			measures[m](ctx)
		}
	}
	return ctx.Err()
}

const warmupSection = "0. Warm-up: one untimed app on each system"

// warmUp runs one untimed app on each system: the first JVMs of a run
// read Spark's jars from disk, and that would be the first system's cost.
func (h *harness) warmUp(ctx context.Context) error {
	for _, s := range h.systems() {
		if _, err := h.ready(ctx, s, warmupSection, 2*time.Minute); err != nil {
			return err
		}
		a, err := h.submit(ctx, s, appSpec{name: "warm-up", executors: 1, cores: 1, conf: oneCoreExecutors(1), tasks: 1, wait: h.cfg.appTimeout})
		if err != nil {
			return err
		}
		if err := a.waitExit(ctx, h.cfg.appTimeout); err != nil {
			return err
		}
		if !a.ok() {
			return fmt.Errorf("the warm-up app failed on %s (exit %d): nothing runs there; its log: %s", s.name(), a.exitCode(), a.log)
		}
		h.progress("warm-up on %s: %.1fs", s.name(), a.exitAt.Sub(a.start).Seconds())
	}
	return nil
}

// stop ends both clusters' daemons by pid: workers first (a worker stopped
// kills its executors), then masters, then ZooKeeper.
func (h *harness) stop() error {
	var groups [][]*daemon
	if h.berth != nil {
		groups = append(groups, h.berth.workerDs, h.berth.masterDs)
	}
	if h.spark != nil {
		groups = append(groups, h.spark.workerDs, h.spark.masterDs, []*daemon{h.spark.zk})
	}
	var mu sync.Mutex
	var errs []error
	for _, g := range groups {
		var wg sync.WaitGroup
		for _, d := range g {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := h.ps.stop(d, 20*time.Second); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
	}
	return errors.Join(errs...)
}

// describeClusters puts the daemons' command lines, the JVMs spark-class
// ran, the settings files and one spark-submit of each system in the
// report, and what Spark's Masters negotiated with ZooKeeper.
func (h *harness) describeClusters() {
	rep := h.rep
	if h.berth != nil {
		for _, d := range h.berth.daemons() {
			rep.daemons["berth"] = append(rep.daemons["berth"], d.commandLine())
		}
	}
	if h.spark != nil {
		for _, d := range h.spark.daemons() {
			rep.daemons["Spark"] = append(rep.daemons["Spark"], d.commandLine())
		}
		for _, d := range append(append([]*daemon{}, h.spark.masterDs...), h.spark.workerDs[0]) {
			if l := firstMatch(filepath.Join(d.logDir, d.name+".1.log"), launchLine); l != "" {
				rep.launches["Spark"] = append(rep.launches["Spark"], d.name+": "+l)
			}
		}
		var paths []string
		for p := range h.spark.files {
			paths = append(paths, p)
		}
		sort.Strings(paths)
		for _, p := range paths {
			rep.files = append(rep.files, settingsFile{p, h.spark.files[p]})
		}
		if l := firstMatch(filepath.Join(h.spark.masterDs[0].logDir, "s1.1.log"), negotiatedLine); l != "" && h.cfg.has(measureFailover) {
			for _, sc := range h.cfg.failoverScenarios {
				rep.table(failoverSection(sc), "Spark's Masters' ZooKeeper session, as s1 logged it: `"+l+"` "+
					"(Spark asks for 60 s, `SparkCuratorUtil.ZK_SESSION_TIMEOUT_MILLIS`; ZooKeeper grants at most 20 ticks).")
			}
		}
	}
	if h.props != "" {
		rep.files = append(rep.files, settingsFile{h.props, driverProperties(h.cfg)})
	}
	rep.submits = h.examples
}

var (
	launchLine     = regexp.MustCompile(`^Spark Command: (.*)$`)
	negotiatedLine = regexp.MustCompile(`(Session establishment complete.*negotiated timeout = \d+)`)
)

// firstMatch is re's first submatch in the file, "" if none.
func firstMatch(path string, re *regexp.Regexp) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if m := re.FindStringSubmatch(sc.Text()); m != nil {
			return m[1]
		}
	}
	return ""
}

// berthVersion is what bin/master says of itself (its git describe at
// build time and commit), and the git describe of the tree it runs from.
func berthVersion(ctx context.Context, cfg *config) string {
	out := []string{}
	if v := commandOutput(ctx, cfg.masterBin(), "--version"); v != "" {
		out = append(out, "`bin/master --version`: "+strings.Join(strings.Fields(v), " "))
	}
	if v := commandOutput(ctx, "git", "-C", filepath.Dir(cfg.bin), "describe", "--tags", "--always", "--dirty"); v != "" {
		out = append(out, "`git describe` of "+filepath.Dir(cfg.bin)+": "+strings.TrimSpace(v))
	}
	if len(out) == 0 {
		return "unknown"
	}
	return strings.Join(out, "; ")
}

var sparkVersionLine = regexp.MustCompile(`version (\S+)`)
var sparkRevisionLine = regexp.MustCompile(`Revision (\S+)`)

// sparkVersion is what spark-submit --version says: version and commit.
func sparkVersion(ctx context.Context, cfg *config) string {
	out := commandOutput(ctx, filepath.Join(cfg.sparkHome, "bin", "spark-submit"), "--version")
	v, r := sparkVersionLine.FindStringSubmatch(out), sparkRevisionLine.FindStringSubmatch(out)
	if v == nil {
		return "unknown (spark-submit --version said nothing)"
	}
	s := v[1]
	if r != nil {
		s += " (revision " + r[1] + ")"
	}
	return s + " from " + cfg.sparkHome
}

func javaVersion(ctx context.Context) string {
	out := commandOutput(ctx, javaPath(), "-version")
	line, _, _ := strings.Cut(out, "\n")
	return strings.TrimSpace(line)
}

// commandOutput runs a short command (bounded to a minute) and returns its
// output, stdout and stderr; "" if it failed.
func commandOutput(ctx context.Context, path string, args ...string) string {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Env = append(os.Environ(), "SPARK_PRINT_LAUNCH_COMMAND=")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return ""
	}
	return string(out)
}

// timeouts are the rows of the report's table of what each system waits
// for: the same where both have the setting.
func timeouts(cfg *config) []string {
	wt := cfg.workerTimeout.String()
	return []string{
		fmt.Sprintf("| a silent worker is dead after | `--worker-timeout %s` (heartbeats every quarter of it) | `spark.worker.timeout=%d` (heartbeats every quarter; checked every timeout) |", wt, int(cfg.workerTimeout.Seconds())),
		fmt.Sprintf("| a new leader waits for workers and apps at most | `--recovery-timeout`, default the worker timeout (%s) | `spark.deploy.recoveryTimeout`, default the worker timeout (%s) |", wt, wt),
		"| the leader is gone after | Raft's default profile: 1 s heartbeat and election timeouts | ZooKeeper's session timeout: Spark asks 60 s, ZooKeeper grants at most 20 × tickTime " +
			fmt.Sprintf("(tickTime %s: %s) |", cfg.zkTickTime, 20*cfg.zkTickTime),
		fmt.Sprintf("| an app whose driver is gone ends after | `--app-timeout`, default the worker timeout (%s) | at once (the driver's connection drops) |", wt),
		"| the driver waits for the cluster's word on an executor whose connection dropped | `spark.standalone.executorRemoveDelayOnDisconnection` (5 s), read by berth's plugin | the same setting (5 s) |",
		"| a new app's driver retries its registration | every 50-500 ms for 30 s (10 s if no master answers at all: `spark.berth.connectTimeout`), then fails | every Master at once, again at 20 and 40 s, and gives up at 60 s (`StandaloneAppClient`: \"All masters are unresponsive! Giving up.\") |",
	}
}
