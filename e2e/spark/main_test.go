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
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
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
	cdsArchive string // Spark's classes, loaded once (AppCDS); "" if none
	cdsPath    string // the class path the archive was made with
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

// prepare builds berth's binaries while it gets Spark, the plugin and the
// jobs ready: the one is Go's compiler, the other mostly JVMs.
func prepare(dir string) error {
	start := time.Now()
	built := make(chan error, 1)
	go func() {
		var err error
		bin, err = testcluster.Build(repoRoot, filepath.Join(dir, "bin"))
		built <- err
	}()
	err := prepareSpark(dir)
	if berr := <-built; berr != nil {
		return berr
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "e2e/spark: prepared in %s (SPARK_HOME %s, class archive %q)\n",
		time.Since(start).Round(100*time.Millisecond), sparkHome, cdsArchive)
	return nil
}

func prepareSpark(dir string) error {
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
	cdsArchive, cdsPath = dumpClasses(dir)
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

// dumpClasses runs the example job once in local mode to archive the
// classes it loads (AppCDS: -XX:ArchiveClassesAtExit), which every JVM of
// the tests then maps instead of loading them from Spark's jars: a JVM
// starts in about half the time and CPU. A JVM may use the archive only if
// its class path begins with the one it was made with, spark-submit's,
// which dumpClasses returns too (spark-class prints it). It returns ""
// when no archive could be made: the JVMs then start the slow way.
func dumpClasses(dir string) (archive, classPath string) {
	archive = filepath.Join(dir, "spark.jsa")
	opts := jvmFlags + " -XX:ArchiveClassesAtExit=" + archive + " -Xlog:cds=off -Dlog4j.configurationFile=" + log4jConf
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(sparkHome, "bin", "spark-submit"), "--master", "local[1]",
		"--conf", "spark.ui.enabled=false", "--conf", "spark.driver.extraJavaOptions="+opts, "--class", "BerthShuffle", appJar, "2", "0")
	cmd.Env = append(os.Environ(), "SPARK_HOME="+sparkHome, "SPARK_PRINT_LAUNCH_COMMAND=1")
	out, err := cmd.CombinedOutput()
	m := regexp.MustCompile(`Spark Command: \S+ -cp (\S+) `).FindSubmatch(out)
	if _, serr := os.Stat(archive); err != nil || serr != nil || m == nil {
		fmt.Fprintf(os.Stderr, "e2e/spark: no class archive, JVMs start without it: %v %v\n%s", err, serr, out)
		return "", ""
	}
	return archive, string(m[1])
}

// jvmFlags start a JVM fast: the client compiler only, the serial GC.
const jvmFlags = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"

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
