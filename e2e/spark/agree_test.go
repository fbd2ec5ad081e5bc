package spark

// Whether the driver's log and berth agree on how each executor of an app
// ended: the plugin logs every end once ("berth: executor N on worker W
// ended STATE[, exit code C], the app's failure | not the app's failure
// (why): ..."), and Spark counts against the app only what it logged as
// the app's failure.

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/berth-cluster/berth/wire"
)

// end is one executor's end as the driver's log says it.
type end struct {
	worker, state string
	exitCode      *int
	appsFailure   bool
	why           string // why it is not the app's failure
	line          string
}

var endRe = regexp.MustCompile(`ExecutorLifecycle: berth: executor (\d+) on worker (\S+) ended ([A-Z]+)(?:, exit code (-?\d+))?, (the app's failure|not the app's failure \(([^)]*)\))[^\n]*`)
var grantedRe = regexp.MustCompile(`ExecutorLifecycle: berth: granted executor (\d+) on worker (\S+) `)

// ends parses the plugin's end lines of a driver's log, by executor id; an
// executor ended twice fails the test.
func ends(t *testing.T, log string) map[int]end {
	t.Helper()
	out := map[int]end{}
	for _, m := range endRe.FindAllStringSubmatch(log, -1) {
		id, _ := strconv.Atoi(m[1])
		e := end{worker: m[2], state: m[3], appsFailure: m[5] == "the app's failure", why: m[6], line: m[0]}
		if m[4] != "" {
			c, _ := strconv.Atoi(m[4])
			e.exitCode = &c
		}
		if prev, dup := out[id]; dup {
			t.Errorf("the driver's log ends executor %d twice:\n  %s\n  %s", id, prev.line, e.line)
		}
		out[id] = e
	}
	return out
}

// agree checks the driver's log against berth's final record of the app
// (its status once it ended): every executor berth lists was granted (but
// for one that failed at once) and ended once in the log, on the same worker, in the same state with the
// same exit code; the log blames the app exactly for berth's FAILED with
// no cause, but for a launcher that found no java or no Spark (127 or 126
// from an executor that never registered), which it blames on the worker;
// and the log ends no executor berth does not list. It returns
// the log's ends, for the test's own checks.
func agree(t *testing.T, log string, a wire.AppStatus) map[int]end {
	t.Helper()
	if !a.State.Finished() {
		t.Fatalf("app %s is %s: its record is not final yet", a.ID, a.State)
	}
	logged := ends(t, log)
	granted := map[int]string{}
	for _, m := range grantedRe.FindAllStringSubmatch(log, -1) {
		id, _ := strconv.Atoi(m[1])
		granted[id] = m[2]
	}
	listed := map[int]bool{}
	for _, e := range a.Executors {
		listed[e.ID] = true
		got, ok := logged[e.ID]
		switch {
		case !ok:
			t.Errorf("app %s: berth says executor %d on %s ended %s (%q); the driver's log says nothing of its end", a.ID, e.ID, e.WorkerID, e.State, e.Message)
			continue
		case got.worker != e.WorkerID || got.state != string(e.State) || !sameCode(got.exitCode, e.ExitCode):
			t.Errorf("app %s, executor %d: berth says %s on %s, exit code %s (%q); the driver's log: %s",
				a.ID, e.ID, e.State, e.WorkerID, code(e.ExitCode), e.Message, got.line)
		}
		// A launcher that found no java or no Spark on its worker exits 127
		// (126) before any JVM: berth says FAILED, the process's own, and the
		// driver, which never heard from the executor, blames the worker.
		unstartable := strings.HasPrefix(got.why, workerLacksWhy)
		if blame := e.State == wire.ExecutorFailed && e.Cause == wire.CauseProcess && !unstartable; got.appsFailure != blame {
			t.Errorf("app %s, executor %d: berth says %s, cause %q (the app's failure: %v); the driver's log: %s",
				a.ID, e.ID, e.State, e.Cause, blame, got.line)
		}
		if unstartable && (e.State != wire.ExecutorFailed || e.Cause != wire.CauseProcess || e.ExitCode == nil ||
			(*e.ExitCode != 127 && *e.ExitCode != 126) || registeredIn(log, e.ID)) {
			t.Errorf("app %s, executor %d: berth says %s, cause %q, exit code %s, registered with the driver: %v; the driver's log blames its worker: %s",
				a.ID, e.ID, e.State, e.Cause, code(e.ExitCode), registeredIn(log, e.ID), got.line)
		}
		// One that failed as it started may be first heard of as ended.
		if w, ok := granted[e.ID]; (!ok && e.State != wire.ExecutorFailed) || (ok && w != e.WorkerID) {
			t.Errorf("app %s: executor %d on %s was never logged as granted there (granted: %v)", a.ID, e.ID, e.WorkerID, granted)
		}
	}
	var extra []int
	for id := range logged {
		if !listed[id] {
			extra = append(extra, id)
		}
	}
	sort.Ints(extra)
	for _, id := range extra {
		t.Errorf("app %s: the driver's log ends executor %d, which berth does not list (%s): %s", a.ID, id, describe(a), logged[id].line)
	}
	return logged
}

// workerLacksWhy begins the driver's reason for the end of an executor
// whose launcher found no java or no Spark on its worker.
const workerLacksWhy = "this worker cannot start Spark executors"

// registeredIn reports whether the driver's log says executor id registered
// (its JVM ran).
func registeredIn(log string, id int) bool {
	return regexp.MustCompile(fmt.Sprintf(`Registered executor .* with ID %d,`, id)).MatchString(log)
}

func sameCode(a, b *int) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

func code(c *int) string {
	if c == nil {
		return "none"
	}
	return strconv.Itoa(*c)
}

// appsFailures counts the ends the log blames on the app.
func appsFailures(logged map[int]end) int {
	n := 0
	for _, e := range logged {
		if e.appsFailure {
			n++
		}
	}
	return n
}
