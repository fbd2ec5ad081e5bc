// Package spark runs real Spark 4.2 jobs on berth through its plugin
// (bin/berth-spark.jar): berth's real binaries on 127.0.0.x, TLS, a tenant's
// token and queue, stock spark-submit and pyspark from the pinned wheel.
// Each test kills, drains or starves something under a running job and
// checks what a user sees: the job's answer, the driver's log, berth's
// record of the app's executors, and that the two agree.
//
// TestMain builds berth's binaries, the plugin (spark/build.sh, unless
// bin/berth-spark.jar is newer than its sources) and the test jobs, and
// gets SPARK_HOME from scripts/spark-deps.sh, which installs Spark when it
// is missing: without Spark or Java the tests fail, they never skip.
package spark

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/berth-cluster/berth/testkit/testcluster"
)

// What TestMain built and found.
var (
	bin        testcluster.Binaries
	sparkHome  string // the pinned pyspark's, with bin/spark-submit and jars/
	python     string // the venv's python3, where pyspark is importable
	pluginJar  string // a copy of bin/berth-spark.jar, for this run
	appJar     string // examples/spark/BerthShuffle.java and testdata/*.java
	log4jConf  string // the drivers' and executors' log4j2 settings
	exampleDir string // examples/spark
)

// repoRoot is the module's root, from this package's directory.
const repoRoot = "../.."

// secret is the operator secret of every cluster.
const secret = "e2e-spark-secret"

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "berth-e2e-spark-")
	if err == nil {
		err = prepare(dir)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e/spark:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	stopShared()
	os.RemoveAll(dir)
	os.Exit(code)
}

func prepare(dir string) error {
	start := time.Now()
	var err error
	if bin, err = testcluster.Build(repoRoot, filepath.Join(dir, "bin")); err != nil {
		return err
	}
	out, err := run(repoRoot, nil, "scripts/spark-deps.sh")
	if err != nil {
		return fmt.Errorf("scripts/spark-deps.sh (Spark and Java are needed, not optional): %w", err)
	}
	sparkHome = strings.TrimSpace(out)
	// SPARK_HOME is VENV/lib/pythonX.Y/site-packages/pyspark.
	python = filepath.Join(sparkHome, "..", "..", "..", "..", "bin", "python")
	if _, err := os.Stat(python); err != nil {
		return fmt.Errorf("the venv's python next to SPARK_HOME %s: %w", sparkHome, err)
	}
	if pluginJar, err = buildPlugin(dir); err != nil {
		return err
	}
	if exampleDir, err = filepath.Abs(filepath.Join(repoRoot, "examples", "spark")); err != nil {
		return err
	}
	if appJar, err = buildJobs(dir); err != nil {
		return err
	}
	log4jConf = filepath.Join(dir, "log4j2.properties")
	if err := os.WriteFile(log4jConf, []byte(log4jProperties), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "e2e/spark: prepared in %s (SPARK_HOME %s)\n", time.Since(start).Round(100*time.Millisecond), sparkHome)
	return nil
}

// buildPlugin copies bin/berth-spark.jar when it is newer than every file
// of spark/ it is built from (make test builds it first), else builds it
// with spark/build.sh (its unit tests are make test's, not ours).
func buildPlugin(dir string) (string, error) {
	jar := filepath.Join(repoRoot, "bin", "berth-spark.jar")
	if stale, err := olderThanSources(jar, filepath.Join(repoRoot, "spark")); err != nil {
		return "", err
	} else if stale {
		if _, err := run(repoRoot, []string{"SKIP_TESTS=1"}, "spark/build.sh"); err != nil {
			return "", fmt.Errorf("spark/build.sh: %w", err)
		}
	}
	data, err := os.ReadFile(jar)
	if err != nil {
		return "", err
	}
	out := filepath.Join(dir, "berth-spark.jar")
	return out, os.WriteFile(out, data, 0o644)
}

// olderThanSources reports whether jar is missing or older than a file of
// src/ or pom.xml under sparkDir.
func olderThanSources(jar, sparkDir string) (bool, error) {
	st, err := os.Stat(jar)
	if err != nil {
		return true, nil
	}
	stale := false
	for _, root := range []string{filepath.Join(sparkDir, "src"), filepath.Join(sparkDir, "pom.xml")} {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if info, err := d.Info(); err == nil && !d.IsDir() && info.ModTime().After(st.ModTime()) {
				stale = true
			}
			return nil
		})
		if err != nil {
			return false, err
		}
	}
	return stale, nil
}

// buildJobs compiles the example job and the tests' own against Spark's
// jars, with the JDK's javac and jar, into one jar.
func buildJobs(dir string) (string, error) {
	classes := filepath.Join(dir, "classes")
	srcs, _ := filepath.Glob("testdata/*.java")
	args := append([]string{"-nowarn", "-d", classes, "-cp", filepath.Join(sparkHome, "jars", "*"),
		filepath.Join(exampleDir, "BerthShuffle.java")}, srcs...)
	if _, err := run(".", nil, "javac", args...); err != nil {
		return "", fmt.Errorf("javac: %w", err)
	}
	jar := filepath.Join(dir, "jobs.jar")
	if _, err := run(".", nil, "jar", "cf", jar, "-C", classes, "."); err != nil {
		return "", fmt.Errorf("jar: %w", err)
	}
	return jar, nil
}

// run runs a command in dir and returns its stdout; its stderr goes to
// ours, and into the error.
func run(dir string, env []string, name string, args ...string) (string, error) {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	os.Stderr.WriteString(stderr.String())
	if err != nil {
		return "", fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, stderr.String())
	}
	return string(out), nil
}

// log4jProperties keeps the drivers' logs to what the tests read (the
// plugin's lines, the scheduler's tasks and executors) and the executors'
// quiet: less to write for JVMs sharing two cores.
const log4jProperties = `rootLogger.level = warn
rootLogger.appenderRef.stderr.ref = stderr
appender.console.type = Console
appender.console.name = stderr
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss.SSS} %p %c{1}: %m%n%ex
logger.scheduler.name = org.apache.spark.scheduler
logger.scheduler.level = info
logger.allocation.name = org.apache.spark.ExecutorAllocationManager
logger.allocation.level = info
logger.decommission.name = org.apache.spark.storage.BlockManagerDecommissioner
logger.decommission.level = info
logger.executor.name = org.apache.spark.executor.CoarseGrainedExecutorBackend
logger.executor.level = info
`
