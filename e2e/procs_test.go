package e2e

// The processes of a test: the daemons and commands it starts, and those it
// has berth start, found by a marker on their command lines.

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/berth-cluster/berth/testkit/testcluster"
)

// start runs path with args and the cluster secret; its output goes to a
// log in the test's temp dir.
func start(t *testing.T, name, path string, args []string) *testcluster.Proc {
	t.Helper()
	dir := t.TempDir()
	dumpLogsOnFailure(t, dir)
	p, err := testcluster.Start(t, name, path, filepath.Join(dir, name+".log"), args,
		testcluster.ProcOptions{Env: []string{"BERTH_SECRET=" + secret, "BERTH_TLS_CA_FILE=" + bin.PKI.CAFile()}})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// dumpLogsOnFailure has the end of every log under dir written into the
// test's log if the test fails. Registered before the processes start, it
// runs after their kills: the logs are complete.
func dumpLogsOnFailure(t *testing.T, dir string) {
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		logs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
		for _, path := range logs {
			data, _ := os.ReadFile(path)
			if len(data) > 6000 {
				data = data[len(data)-6000:]
			}
			t.Logf("---- %s ----\n%s", filepath.Base(path), data)
		}
	})
}

// stop sends SIGTERM and waits up to timeout for the process to exit (the
// test fails if it does not); it returns the exit: nil for status 0.
func stop(t *testing.T, p *testcluster.Proc, timeout time.Duration) error {
	t.Helper()
	if err := p.Stop(timeout); err != nil {
		t.Fatal(err)
	}
	return p.Err()
}

// signal sends sig to the process, by pid; the test fails if it cannot.
func signal(t *testing.T, p *testcluster.Proc, sig syscall.Signal) {
	t.Helper()
	if err := p.Signal(sig); err != nil {
		t.Fatalf("signal %v to %s: %v", sig, p.Name, err)
	}
}

// logCount is the number of lines of the process's log that match re.
func logCount(p *testcluster.Proc, re string) int {
	return len(p.LogMatches(regexp.MustCompile(re)))
}

var markerSeq atomic.Int64

// newMarker returns a string unique to this test run that is also a valid
// duration for sleep(1), which adds up its arguments: ["sleep", "600",
// marker] sleeps 600 s and carries the marker in its command line, so that
// pidsOf finds exactly the processes of one test. A cleanup kills, by pid,
// whatever still carries the marker when the test ends (the processes the
// test had berth start; the workers' children die with them, this is in
// case one did not).
func newMarker(t *testing.T) string {
	t.Helper()
	m := fmt.Sprintf("0.%d%04d%06d", os.Getpid()%100000, markerSeq.Add(1), time.Now().UnixNano()%1000000)
	t.Cleanup(func() {
		for _, pid := range pidsOf(m) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	return m
}

// pidsOf returns the pids of the live processes carrying marker.
func pidsOf(marker string) []int {
	var pids []int
	for _, p := range testcluster.Marked(marker) {
		pids = append(pids, p.Pid)
	}
	return pids
}

// sleepArgs is the argv of a long-running, harmless process carrying
// marker.
func sleepArgs(marker string) []string { return []string{"sleep", "600", marker} }

// pidsUnder returns the pids carrying marker whose working directory is
// under dir: a worker starts each child in its own directory under its
// --work-dir, so this tells which worker runs a process.
func pidsUnder(marker, dir string) []int {
	var out []int
	for _, pid := range pidsOf(marker) {
		cwd, _ := os.Readlink(filepath.Join("/proc", strconv.Itoa(pid), "cwd"))
		if cwd == dir || strings.HasPrefix(cwd, dir+string(filepath.Separator)) {
			out = append(out, pid)
		}
	}
	return out
}

// samePids reports whether two pid lists hold the same pids.
func samePids(a, b []int) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}
