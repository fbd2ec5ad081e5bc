package e2e

// A preemption in progress when its leader is killed.

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/berth-cluster/berth/testkit/testcluster"
	"github.com/berth-cluster/berth/testkit/testproc"
	"github.com/berth-cluster/berth/wire"
)

// workerLogTimes returns the times of the lines of a worker's log that say
// msg about executor exec of app.
func workerLogTimes(t *testing.T, w *testcluster.Worker, msg, appID string, exec int) []time.Time {
	t.Helper()
	re := regexp.MustCompile(`^time=(\S+) .*msg="?` + regexp.QuoteMeta(msg) + `.* app=` + regexp.QuoteMeta(appID) + ` executor=` + strconv.Itoa(exec) + `( |$)`)
	var out []time.Time
	for _, line := range w.LogMatches(re) {
		at, err := time.Parse(time.RFC3339Nano, re.FindStringSubmatch(line)[1])
		if err != nil {
			t.Fatalf("worker %s's log line %q: %v", w.ID, line, err)
		}
		out = append(out, at)
	}
	return out
}

// TestQueuesLeaderKilledMidPreemption, on three masters and two workers of
// 2 cores (--preemption-delay 1s, --preemption-grace 5s): an app of queue a
// holds the 4 cores, its executors ignoring SIGTERM; an app of queue b
// registers; as soon as the executors marked for b have had their
// SIGTERM, the leader is killed with SIGKILL. From outside: each marked
// executor got one SIGTERM and, the grace later, one SIGKILL from its
// worker, and ended KILLED "preempted for queue b"; nothing else got
// either (a's other executors RUNNING, same processes; b's untouched);
// the new leader gives b its share (2 and 2 in GET /v1/queues and in the
// apps' executors) and keeps it; the queues' settings and the audit log
// (on every master left) survive.
func TestQueuesLeaderKilledMidPreemption(t *testing.T) {
	t.Parallel()
	const delay, grace = time.Second, 5 * time.Second
	cl := startCluster(t, clusterSpec{masters: 3, flags: queuesFlags(delay, grace, "--worker-timeout", "10s"),
		workers: []string{"w1", "w2"}, cores: 2, memory: "1g"})
	led := &auditLedger{}
	cl.setQueues(led, map[string]wire.QueueSpec{"a": {Weight: weightOf(1)}, "b": {Weight: weightOf(1)}})
	queuesBefore, err := cl.c.Queues(callCtx(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	register := func(desc wire.AppDescription) string {
		t.Helper()
		id, err := cl.c.RegisterApp(callCtx(t, 30*time.Second), desc)
		if err != nil {
			t.Fatal(err)
		}
		led.operator(wire.MasterAPI.RegisterApp.Mux(), id)
		followEvents(t, cl.c, id)
		return id
	}
	appA := register(cl.termApp("holder", "a", 0, dir, false))
	before := cl.runningApp(appA, 4, 30*time.Second)
	execsA := executorsByID(before, appA, wire.ExecutorRunning)
	pidsA := cl.execPids()
	oldLeader := cl.master(before.MasterID)

	appB := register(cl.termApp("owed", "b", 0, dir, false))
	var marked []int
	testproc.Eventually(t, delay+15*time.Second, "executors of a marked and sent SIGTERM", func() error {
		marked = marked[:0]
		for id := range execsA {
			if len(sigterms(t, dir, appA, id)) > 0 {
				marked = append(marked, id)
			}
		}
		if len(marked) < 2 {
			return fmt.Errorf("SIGTERMed so far: %v", marked)
		}
		return nil
	})
	slices.Sort(marked)
	oldLeader.Proc().Kill()
	killedAt := time.Now()
	firstTerm := slices.MinFunc(append(sigterms(t, dir, appA, marked[0]), sigterms(t, dir, appA, marked[1])...), func(a, b time.Time) int { return a.Compare(b) })
	t.Logf("executors %v of a SIGTERMed; leader %s SIGKILLed %s after the first SIGTERM", marked, oldLeader.ID, killedAt.Sub(firstTerm).Round(time.Millisecond))
	if killedAt.Sub(firstTerm) > grace/2 {
		t.Fatalf("the leader was killed %s after the first SIGTERM: not mid-preemption (grace %s)", killedAt.Sub(firstTerm), grace)
	}
	if !slices.Equal(marked, []int{2, 3}) {
		t.Errorf("executors of a marked: %v, want the most recent [2 3]", marked)
	}
	var unmarked []int
	for id := range execsA {
		if !slices.Contains(marked, id) {
			unmarked = append(unmarked, id)
		}
	}
	newLeader, _ := cl.leader(30*time.Second, oldLeader)
	t.Logf("%s leads %s after the kill", newLeader.ID, time.Since(killedAt).Round(time.Millisecond))

	settled := func() error {
		st, err := cl.status()
		if err != nil {
			return err
		}
		if st.MasterID == oldLeader.ID {
			return fmt.Errorf("the old leader answers")
		}
		a, _ := appStatus(st, appA)
		b, _ := appStatus(st, appB)
		if got := preemptedIDs(a, "b"); !slices.Equal(got, marked) {
			return fmt.Errorf("a's executors ended preempted for b: %v, want %v (%s)", got, marked, describeExecs(a))
		}
		if len(executorsIn(a, wire.ExecutorRunning)) != 2 || len(liveExecutors(a)) != 2 || len(executorsIn(b, wire.ExecutorRunning)) != 2 || len(liveExecutors(b)) != 2 {
			return fmt.Errorf("a %s, b %s; want 2 RUNNING each", describeExecs(a), describeExecs(b))
		}
		qs, err := cl.c.Queues(callCtx(t, 5*time.Second))
		if err != nil {
			return err
		}
		qa, _ := queueIn(qs, "a")
		qb, _ := queueIn(qs, "b")
		if qa.InUse.Cores != 2 || qb.InUse.Cores != 2 {
			return fmt.Errorf("GET /v1/queues: a uses %d cores, b %d; want 2 and 2", qa.InUse.Cores, qb.InUse.Cores)
		}
		if got := cl.execPids(); !maps.Equal(pick(got, appA, unmarked...), pick(pidsA, appA, unmarked...)) {
			return fmt.Errorf("a's unmarked executors' processes %v, before %v", pick(got, appA, unmarked...), pick(pidsA, appA, unmarked...))
		}
		return nil
	}
	testproc.Eventually(t, grace+30*time.Second, "the preemption carried through by the new leader: a and b at 2 cores each", settled)
	// And it holds: past the delay again, nothing more is taken, and
	// nothing but the marked executors was ever sent a SIGTERM.
	testproc.Stable(t, 3*delay, "the shares holding on the new leader", func() error {
		for _, id := range unmarked {
			if terms := sigterms(t, dir, appA, id); len(terms) > 0 {
				return fmt.Errorf("executor %d of a, not marked by the old leader, got SIGTERM at %s (%s after the old leader's kill): "+
					"taken again for b while the marked %v were in their grace", id, terms[0].Format("15:04:05.000"), terms[0].Sub(killedAt).Round(time.Millisecond), marked)
			}
		}
		return settled()
	})

	// Each marked executor killed once, nothing else.
	st := cl.mustStatus()
	for id, e := range execsA {
		w := cl.worker(e.WorkerID)
		terms := sigterms(t, dir, appA, id)
		kills := workerLogTimes(t, w, "still running after the grace period; sending SIGKILL", appA, id)
		ends := workerLogTimes(t, w, "executor ended", appA, id)
		if !slices.Contains(marked, id) {
			if len(terms)+len(kills)+len(ends) > 0 {
				t.Errorf("executor %d of a (unmarked) got SIGTERMs %v, SIGKILLs %v, ended %v; want nothing", id, terms, kills, ends)
			}
			continue
		}
		if termBursts(t, fmt.Sprintf("marked executor %d of a", id), terms) != 1 || len(kills) != 1 || len(ends) != 1 {
			t.Errorf("marked executor %d of a on %s: SIGTERMs %v, SIGKILLs %v, ended %v; want one kill: one SIGTERM, one SIGKILL, one end", id, w.ID, terms, kills, ends)
			continue
		}
		// From the worker's own SIGTERM: the executor's record of it comes
		// later, by its shell's trap (a fork of date: a quarter second on
		// a loaded machine, which read as a SIGKILL come early).
		sent := workerLogTimes(t, w, "sending SIGTERM", appA, id)
		if len(sent) != 1 {
			t.Errorf("marked executor %d on %s: the worker logged %d SIGTERMs sent, want 1", id, w.ID, len(sent))
		} else if gap := kills[0].Sub(sent[0]); gap < grace-100*time.Millisecond || gap > grace+time.Second {
			t.Errorf("marked executor %d: SIGKILL %s after its SIGTERM, want the grace %s", id, gap.Round(time.Millisecond), grace)
		}
		a, _ := appStatus(st, appA)
		for _, x := range a.Executors {
			if x.ID == id && (x.State != wire.ExecutorKilled || !strings.HasPrefix(x.Message, "preempted for queue b")) {
				t.Errorf("marked executor %d ended %s %q, want KILLED \"preempted for queue b...\"", id, x.State, x.Message)
			}
		}
	}
	b, _ := appStatus(st, appB)
	for _, e := range b.Executors {
		if terms := sigterms(t, dir, appB, e.ID); len(terms) > 0 || e.State != wire.ExecutorRunning {
			t.Errorf("executor %d of b: %s, SIGTERMs %v; want RUNNING, none", e.ID, e.State, terms)
		}
	}
	applied := 0
	for _, w := range cl.Workers {
		applied += logCount(w.Proc, `msg="command applied" command="kill executor"`)
	}
	t.Logf("kill commands the workers applied: %d (the new leader resends what the old one had marked; the worker kills once)", applied)

	// The queues and the audit log survived, on the new leader and on the
	// other master left.
	qs, err := cl.c.Queues(callCtx(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := queueSettings(qs), queueSettings(queuesBefore); !maps.Equal(got, want) {
		t.Errorf("queues on the new leader %v, before %v", got, want)
	}
	for _, name := range []string{"a", "b"} {
		if q, _ := queueIn(qs, name); q.FairShare.Cores != 2 || q.InUse.Cores != 2 {
			t.Errorf("queue %s on the new leader: in use %+v, fair share %+v; want 2 cores of each", name, q.InUse, q.FairShare)
		}
	}
	led.check(t, cl.c, "on the new leader")
	for _, m := range cl.others(oldLeader) {
		a, err := call(http.MethodGet, m.URL+"/v1/audit", secret, nil)
		var audit wire.Audit
		if err != nil || a.status != http.StatusOK || json.Unmarshal([]byte(a.body), &audit) != nil {
			t.Errorf("GET /v1/audit on %s: %v %d %s", m.ID, err, a.status, a.body)
			continue
		}
		if lacking, _ := led.missing(audit.Entries); len(lacking) > 0 {
			t.Errorf("the audit log on %s lacks %+v", m.ID, lacking)
		}
	}
}

// pick returns the entries of execPids' map for executors ids of app.
func pick(pids map[string]int, appID string, ids ...int) map[string]int {
	out := map[string]int{}
	for _, id := range ids {
		if pid, ok := pids[execKey(appID, id)]; ok {
			out[execKey(appID, id)] = pid
		}
	}
	return out
}
