package e2e

// make demo and make demo-pi, as a new user runs them (scripts/demo.sh and
// scripts/demo-pi.sh with this test's binaries): their local TLS cluster
// runs the job through a kill -9 of the leader, prints its result and the
// new leader, and stops everything it started.

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// demos runs one demo at a time: each starts its masters on 127.0.0.1-3
// at port 7077 when it is free, as a user's would, and two starting at
// once both found it free (every master of one then failed to bind, and
// its demo waited for workers that could not register).
var demos sync.Mutex

// runDemo runs a demo script with this test's binaries and checks what
// every demo prints: the leader before the kill, another after it, and no
// shell's "Killed" line.
func runDemo(t *testing.T, script string, timeout time.Duration, env ...string) string {
	t.Helper()
	demos.Lock()
	defer demos.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, script)
	cmd.Env = append(append(cmd.Environ(), "BERTH_DEMO_BIN="+filepath.Dir(bin.Master)), env...)
	out, err := cmd.CombinedOutput()
	text := string(out)
	if err != nil {
		t.Fatalf("%s: %v\n%s", script, err, text)
	}
	leader := regexp.MustCompile(`(?m)^leader: (m[123])$`).FindStringSubmatch(text)
	newLeader := regexp.MustCompile(`(?m)^new leader: (m[123]) \(was (m[123])\)$`).FindStringSubmatch(text)
	switch {
	case leader == nil:
		t.Errorf("the demo named no leader before the kill:\n%s", text)
	case newLeader == nil || newLeader[2] != leader[1] || newLeader[1] == leader[1]:
		t.Errorf("the demo named no new leader after killing %s:\n%s", leader[1], text)
	}
	if strings.Contains(text, "Killed") {
		t.Errorf("the demo prints the shell's Killed line:\n%s", text)
	}
	return text
}

// make demo: a PySpark job on the cluster, as a tenant, through the
// leader's kill -9; Spark's result printed.
func TestDemoScript(t *testing.T) {
	t.Parallel()
	jar, err := filepath.Abs("../bin/berth-spark.jar") // make test builds it before the tests (spark/build.sh)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(jar); err != nil {
		t.Fatalf("the plugin %s: %v (make build, or spark/build.sh, makes it)", jar, err)
	}
	text := runDemo(t, "../scripts/demo.sh", 6*time.Minute, "BERTH_SPARK_JAR="+jar)
	for _, want := range []string{"== the job is running (RUNNING:", "its tasks started); kill -9 the leader", "Pi is roughly 3.1", "quadrants: 4",
		"pyspark-pi  FINISHED", "no executor of the job lost to the failover"} {
		if !strings.Contains(text, want) {
			t.Errorf("the demo's output lacks %q:\n%s", want, text)
		}
	}
}

// make demo-pi: the Go pi example as a supervised driver.
func TestDemoPiScript(t *testing.T) {
	t.Parallel()
	text := runDemo(t, "../scripts/demo-pi.sh", 3*time.Minute)
	for _, want := range []string{"Pi is roughly 3.14", "FINISHED exit code 0"} {
		if !strings.Contains(text, want) {
			t.Errorf("the demo's output lacks %q:\n%s", want, text)
		}
	}
}
