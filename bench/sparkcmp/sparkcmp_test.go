package sparkcmp

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestShortComparison is the comparison's short version, what make test
// runs: one round of every measure at its smallest (one way of each: a
// worker killed, not frozen; the master killed, not stopped; the app
// without spark.executor.cores; two apps in the burst), on a berth built
// here and the pinned Spark (scripts/spark-deps.sh), with timeouts cut
// short (a worker timeout of 3 s on both, ZooKeeper sessions of at most
// 20 s: a Master whose session is suspended, after two thirds of it
// without an answer, shuts itself down, and a loaded machine stalls for
// seconds), and no warm-up.
// It checks that the run completes and that every figure is there for
// both systems, and of the goals only the one that is not a time (no
// replacement executor of berth's below the unit): the machine is shared
// with the rest of the tests. The full comparison is make bench-spark.
func TestShortComparison(t *testing.T) {
	sparkHome, root := findSpark(t)
	cfg := shortConfig(berthBinaries(t, root), sparkHome)
	if err := cfg.check(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), cfg.maxTime)
	defer cancel()
	var out, progress bytes.Buffer
	rep, err := compare(ctx, cfg, []string{"go", "test", "-run", "TestShortComparison", "./bench/sparkcmp"}, &out, &progress)
	t.Logf("progress:\n%s", progress.String())
	t.Logf("report:\n%s", out.String())
	if err != nil {
		t.Fatalf("the run failed: %v", err)
	}
	for _, f := range expectedFigures(cfg) {
		for _, sys := range systemNames {
			if _, ok := rep.lookup(f[0], f[1], sys); !ok {
				t.Errorf("no %s figure %q in %q", sys, f[1], f[0])
			}
		}
	}
	for _, want := range []string{"## The two clusters", "spark.deploy.recoveryMode       ZOOKEEPER", "ZooKeeperServerMain",
		"--min-core-unit 2", "The JVMs spark-class started", "## The goals, on this run"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the report lacks %q", want)
		}
	}
	if n := rep.problems(); n > 0 {
		t.Errorf("%d problems in the report (its notes)", n)
	}
	// One goal is a rule of placement, not a time, and so holds on a
	// loaded machine too: berth replaces a lost worker's executors with
	// none smaller than the unit.
	unit := false
	for _, g := range rep.goals {
		if strings.HasPrefix(g.what, "no berth replacement executor smaller than the unit") {
			unit = true
			if g.met != "yes" {
				t.Errorf("%s: berth %s, Spark %s: met %q", g.what, g.berth, g.spark, g.met)
			}
		}
	}
	if !unit {
		t.Error("the report has no goal of the unit's")
	}
}

// berthBinaries is a directory with the master and the worker built from
// this tree and bin/berth-spark.jar; or BERTH_BIN, as
// examples/spark/local-cluster.sh takes it (binaries built elsewhere, say
// from git archive while the tree is mid-edit).
func berthBinaries(t *testing.T, root string) string {
	t.Helper()
	if dir := os.Getenv("BERTH_BIN"); dir != "" {
		return dir
	}
	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", bin+"/", "./cmd/master", "./cmd/worker")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the master and the worker: %v\n%s", err, out)
	}
	jar, err := os.ReadFile(filepath.Join(root, "bin", "berth-spark.jar"))
	if err != nil {
		t.Fatalf("no bin/berth-spark.jar (spark/build.sh makes it; make test runs it first, after scripts/test-deps.sh installs Maven and a JDK): %v", err)
	}
	if err := os.WriteFile(filepath.Join(bin, "berth-spark.jar"), jar, 0o644); err != nil {
		t.Fatal(err)
	}
	return bin
}

// shortConfig is one round of everything, the smallest sizes, and short
// timeouts.
func shortConfig(bin, sparkHome string) *config {
	return &config{
		bin: bin, sparkHome: sparkHome, measures: allMeasures,
		rounds: 1, failoverRounds: 1, fragmentationRounds: 1, burstRounds: 1,
		workers: 2, workerCores: 4, workerMemory: "4g", executorMemory: "512m",
		// Short-lived JVMs of both systems start on less CPU (C1 only, one
		// GC thread): the test's budget is the JVMs' start.
		javaOptions:   "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
		workerTimeout: 3 * time.Second, zkTickTime: time.Second, minCoreUnit: 2,
		startupExecutors: []int{2},
		lossModes:        []string{lossKill}, lossExecutors: 1, lossTasks: 2, lossKillAfter: 500 * time.Millisecond,
		taskTime:          time.Second,
		failoverScenarios: []string{scenarioKill}, failoverExecutors: 1, failoverTasks: 3,
		failoverKillAfter: 500 * time.Millisecond, failoverTimeout: 2 * time.Minute, failoverAttempts: 5,
		fragmentationCases: []string{fragUnset}, fragmentationCores: 2, fragmentationExecutorCores: 2,
		burstApps: 2, burstConcurrency: 2, burstIdle: 2 * time.Second,
		appTimeout: 3 * time.Minute, maxTime: 12 * time.Minute, // under make test's -timeout 14m
	}
}

// expectedFigures are every section and figure the run must give both
// systems.
func expectedFigures(cfg *config) [][2]string {
	var out [][2]string
	for _, n := range cfg.startupExecutors {
		for _, f := range []string{figContext, figFirstExec, figNRegistered, figShortJob, figEndToEnd} {
			out = append(out, [2]string{startupSection(n), f})
		}
	}
	for _, mode := range cfg.lossModes {
		for _, f := range []string{figLossNoticed, figLossBack, figLossJob, figLossCalm, figLossSlower} {
			out = append(out, [2]string{lossSection(cfg, mode), f})
		}
	}
	for _, sc := range cfg.failoverScenarios {
		for _, f := range []string{figNewActive, figNewAppExec, figNewAppTries, figBaseline, figNewAppExcess, figRunningJob, figRunningEnded} {
			out = append(out, [2]string{failoverSection(sc), f})
		}
	}
	h := &harness{cfg: cfg}
	for _, fc := range h.fragCases() {
		out = append(out, [2]string{fragSection, fragFigure(fc, figFragSmallest)}, [2]string{fragSection, fragFigure(fc, figFragCount)})
	}
	for _, f := range []string{figBurstRate, figBurstFailed, figBurstAppWall, figBurstCPU, figBurstPeak, figBurstRSS, figBurstIdleCPU, figBurstAppCPU, figBurstCtlPlane} {
		out = append(out, [2]string{burstSection(cfg), f})
	}
	return out
}

// findSpark finds the pinned Spark (SPARK_HOME, else the venv of
// scripts/spark-deps.sh, which scripts/test-deps.sh runs) and the module's
// root. Without Spark or a JDK the test fails, naming the script that
// installs them: no Spark test may skip (make test runs test-deps first).
func findSpark(t *testing.T) (sparkHome, root string) {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for root = wd; ; root = filepath.Dir(root) {
		if _, err := os.Stat(filepath.Join(root, "go.mod")); err == nil {
			break
		}
		if filepath.Dir(root) == root {
			t.Fatalf("no go.mod above %s", wd)
		}
	}
	if _, err := exec.LookPath("javac"); err != nil && os.Getenv("JAVA_HOME") == "" {
		t.Fatal("no JDK (javac on PATH, or JAVA_HOME): scripts/test-deps.sh installs one (make test runs it first)")
	}
	candidates := []string{os.Getenv("SPARK_HOME")}
	venv, _ := filepath.Glob(filepath.Join(root, ".deps/spark/venv/lib/python3*/site-packages/pyspark"))
	for _, c := range append(candidates, venv...) {
		if c == "" {
			continue
		}
		if _, err := os.Stat(filepath.Join(c, "bin", "spark-submit")); err == nil {
			return c, root
		}
	}
	t.Fatal("no Spark: SPARK_HOME unset (or without bin/spark-submit) and no .deps/spark venv: scripts/test-deps.sh installs the pinned pyspark (make test runs it first)")
	return "", ""
}

// The timeline's counting: back to N means the survivors and the
// replacements, never the lost worker's executors.
func TestFirstLiveAfter(t *testing.T) {
	t0 := time.UnixMilli(1_000_000)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	execs := []executor{
		{id: "0", cores: 1, host: "a", added: at(0)},
		{id: "1", cores: 1, host: "b", added: at(0.1)},
		{id: "2", cores: 1, host: "b", added: at(0.2), removed: at(3)}, // ended before the kill: not counted
		{id: "3", cores: 1, host: "a", added: at(14)},
		{id: "4", cores: 1, host: "a", added: at(15)},
	}
	notB := func(e executor) bool { return e.host != "b" }
	back, ok := firstLiveAfter(execs, 3, 0, at(5), notB)
	if !ok || !back.Equal(at(15)) {
		t.Errorf("back at %v (%v), want 15 s", back.Sub(t0), ok)
	}
	if _, ok := firstLiveAfter(execs, 4, 0, at(5), notB); ok {
		t.Error("four executors off host b counted; there are three")
	}
	if got, _ := firstLive(execs, 2, 0, time.Time{}, nil); !got.Equal(at(0.1)) {
		t.Errorf("two registered at %v, want 0.1 s", got.Sub(t0))
	}
	if i, _ := busiestHost(liveAt(execs, at(5)), []string{"a", "b"}); i != 0 {
		t.Errorf("busiest host %d, want 0 (a and b one each at 5 s; a first)", i)
	}
}

// The driver's lines are read as they come; anything else on its stdout
// is not an event.
func TestParseEvent(t *testing.T) {
	ev, ok := parseEvent("BERTHBENCH added 1796166933899 1 4 127.0.0.132")
	if !ok || ev.kind != "added" || ev.at.UnixMilli() != 1796166933899 || strings.Join(ev.fields, " ") != "1 4 127.0.0.132" {
		t.Errorf("parsed %+v, %v", ev, ok)
	}
	for _, line := range []string{"Pi is roughly 3.14", "BERTHBENCH added notatime 1", "BERTHBENCH"} {
		if _, ok := parseEvent(line); ok {
			t.Errorf("%q parsed as an event", line)
		}
	}
	if got := executors([]event{ev}); len(got) != 1 || got[0].cores != 4 || got[0].host != "127.0.0.132" {
		t.Errorf("executors %+v", got)
	}
}
