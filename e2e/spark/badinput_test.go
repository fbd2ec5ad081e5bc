package spark

// Settings berth cannot run: each fails SparkContext's start within
// seconds, saying what is wrong, instead of leaving a driver that waits for
// executors that never come.

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/berth-cluster/berth/security"
	"github.com/berth-cluster/berth/testkit/testcluster"
	"github.com/berth-cluster/berth/testkit/testproc"
	"github.com/berth-cluster/berth/wire"
)

// Each case is one SparkContext of one JVM (BadStart, in testdata), so
// that the JVM's start is paid once; the last case, with nothing wrong,
// shows that the JVM could start one.
func TestSparkBadInputFailsAtStart(t *testing.T) {
	t.Parallel()
	cl := shared(t)
	slots(t, 1)
	closed, err := testcluster.FreePort("127.0.0.1") // nothing listens there once it is closed
	if err != nil {
		t.Fatal(err)
	}
	nowhere := fmt.Sprintf("127.0.0.1:%d", closed)
	// A CA that did not sign the masters' certificates: the plugin must
	// refuse the masters it names, not take any certificate.
	otherCA := t.TempDir()
	if err := security.CreateCA(otherCA); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, settings string
		want           []string // in the exception's message
	}{
		{"queue", "spark.berth.queue=nope", []string{"berth refused the app", `"nope"`}},
		{"token", "spark.berth.token=bt.acme.notitstoken", []string{"refused the credential", "spark.berth.token"}},
		{"master", "spark.master=spark+berth://" + nowhere + ";spark.berth.connectTimeout=2s",
			[]string{"no master answers at https://" + nowhere}},
		{"ca", "spark.berth.tls.caFile=" + filepath.Join(otherCA, "ca.pem") + ";spark.berth.connectTimeout=2s", []string{"TLS with https://", "PKIX path validation failed", "check spark.berth.tls.caFile"}},
		{"memory", "spark.executor.memory=8g", []string{"cannot start", "no worker has", "MB"}},
		// Dynamic allocation starts at no executor: berth still says none could start.
		{"memory-dynamic", "spark.executor.memory=8g;spark.executor.instances=0;spark.dynamicAllocation.enabled=true;" +
			"spark.dynamicAllocation.shuffleTracking.enabled=true", []string{"cannot start", "no worker has"}},
		{"none", "spark.executor.instances=0", nil},
		// Spark's settings as berth's, read back from the master below.
		{"settings", "spark.executor.instances=3;spark.executor.cores=2;spark.executor.memory=512m;spark.executor.memoryOverhead=400m;" +
			"spark.cores.max=4;spark.berth.priority=5;spark.berth.constraints=zone!=z9;spark.scheduler.minRegisteredResourcesRatio=0", nil},
	}
	args := []string{"--class", "BadStart", appJar}
	for _, c := range cases {
		args = append(args, c.name, c.settings)
	}
	r := cl.submit(t, "bad-start", nil, args...)
	r.wait(2*time.Minute, "CASE settings")
	out := map[string][]string{}
	for _, m := range regexp.MustCompile(`(?m)^CASE (\S+) ([0-9.]+) (.*)$`).FindAllStringSubmatch(r.log(), -1) {
		out[m[1]] = m[2:]
	}
	for _, c := range cases {
		got, ok := out[c.name]
		if !ok {
			t.Errorf("%s (%s): no outcome printed", c.name, c.settings)
			continue
		}
		secs, _ := strconv.ParseFloat(got[0], 64)
		switch {
		case c.want == nil && got[1] != "started":
			t.Errorf("%s (%s): %s; want it started", c.name, c.settings, got[1])
		case c.want != nil && !strings.HasPrefix(got[1], "failed: org.apache.spark.SparkException: berth"):
			t.Errorf("%s (%s): %s; want a SparkException of berth's", c.name, c.settings, got[1])
		case secs > 15:
			t.Errorf("%s (%s): took %.1f s to end SparkContext's start; want seconds", c.name, c.settings, secs)
		}
		for _, w := range c.want {
			if !strings.Contains(got[1], w) {
				t.Errorf("%s (%s): %q does not say %q", c.name, c.settings, got[1], w)
			}
		}
		t.Logf("%s: %.1f s: %s", c.name, secs, got[1])
	}
	checkSettingsMapped(t, cl)
}

// checkSettingsMapped checks what the master recorded of the app BadStart
// started with Spark's settings: each is berth's own (docs/SPARK.md), as
// the real master took them, not a fake's reading of the request.
func checkSettingsMapped(t *testing.T, cl *sparkCluster) {
	t.Helper()
	var a *wire.AppStatus
	testproc.Eventually(t, 30*time.Second, "the app of the settings case ended", func() error {
		ctx, cancel := callCtx()
		defer cancel()
		st, err := cl.c.Cluster(ctx)
		if err != nil {
			return err
		}
		for _, x := range append(st.ActiveApps, st.CompletedApps...) {
			if x.Name == "bad-start-settings" && x.State.Finished() {
				a = &x
				return nil
			}
		}
		return fmt.Errorf("no ended app bad-start-settings among %d apps", len(st.ActiveApps)+len(st.CompletedApps))
	})
	limit := -1
	if a.ExecutorLimit != nil {
		limit = *a.ExecutorLimit
	}
	want := "limit 3, 2 cores and 912 MB per executor, max 4 cores, priority 5, constraints [zone not in [z9]], queue etl"
	got := fmt.Sprintf("limit %d, %d cores and %d MB per executor, max %d cores, priority %d, constraints %v, queue %s",
		limit, a.CoresPerExecutor, a.MemoryPerExecutorMB, a.MaxCores, a.Priority, a.Constraints, a.Queue)
	if got != want {
		t.Errorf("the master recorded %s; want %s", got, want)
	}
}
