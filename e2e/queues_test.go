package e2e

// End-to-end tests of the shared cluster (issue 20: queues with weighted
// DRF fair shares, guarantees and limits, preemption, tenants with tokens,
// the audit log), through the real binaries on 127.0.0.x. This file: the
// fair shares two tenants reach with their tokens, and a preemption timed
// against --preemption-delay. Helpers: queues_helpers_test.go.

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/berth-cluster/berth/client"
	"github.com/berth-cluster/berth/testkit/testproc"
	"github.com/berth-cluster/berth/wire"
)

// TestQueuesTenantsReachWeightedFairShares: the operator makes queues a
// (weight 1) and b (weight 2, a limit of 5 cores that never binds) and
// tenants ta (queue a) and tb (queue b); with ta's token an app of a takes
// all 6 cores of the two workers; with tb's, an app of b asks for all of
// them too. Once preemption settles, a holds 2 cores and b 4 (their
// weighted dominant shares, 1/3 and 2/3), in GET /v1/queues (use and fair
// share, for the operator and for a tenant) and counted from the apps'
// RUNNING executors; no queue ever passes its limit; the 4 executors taken
// from a are its most recent, KILLED "preempted for queue b"; the shares
// then hold; every write is in the audit log under its principal.
func TestQueuesTenantsReachWeightedFairShares(t *testing.T) {
	t.Parallel()
	const delay = time.Second
	cl := startCluster(t, clusterSpec{flags: queuesFlags(delay, time.Second), workers: []string{"w1", "w2"}, cores: 3, memory: "1g"})
	led := &auditLedger{}
	cl.setQueues(led, map[string]wire.QueueSpec{
		"a": {Weight: weightOf(1)},
		"b": {Weight: weightOf(2), Limit: &wire.Amount{Cores: 5}},
	})
	ca := tenantClient(t, cl.createTenant(led, "ta", "a"), cl.URLs()...)
	cb := tenantClient(t, cl.createTenant(led, "tb", "b"), cl.URLs()...)
	dir := t.TempDir()

	appA, err := ca.RegisterApp(callCtx(t, 30*time.Second), cl.termApp("greedy-a", "a", 0, dir, true))
	if err != nil {
		t.Fatalf("ta registering its app in queue a: %v", err)
	}
	led.tenant("ta", wire.MasterAPI.RegisterApp.Mux(), appA, "ok")
	followEvents(t, ca, appA)
	cl.runningApp(appA, 6, 30*time.Second)

	appB, err := cb.RegisterApp(callCtx(t, 30*time.Second), cl.termApp("greedy-b", "b", 0, dir, true))
	if err != nil {
		t.Fatalf("tb registering its app in queue b: %v", err)
	}
	led.tenant("tb", wire.MasterAPI.RegisterApp.Mux(), appB, "ok")
	followEvents(t, cb, appB)

	limitPassed := func(qs wire.Queues) error {
		for _, q := range qs.Queues {
			if q.Limit != nil && q.Limit.Cores > 0 && q.InUse.Cores > q.Limit.Cores {
				return fmt.Errorf("queue %s holds %d cores, its limit is %d", q.Name, q.InUse.Cores, q.Limit.Cores)
			}
		}
		return nil
	}
	var overLimit []string
	settled := func() error {
		st, err := cl.status()
		if err != nil {
			return err
		}
		a, _ := appStatus(st, appA)
		b, _ := appStatus(st, appB)
		ra, rb := len(executorsIn(a, wire.ExecutorRunning)), len(executorsIn(b, wire.ExecutorRunning))
		if ra != 2 || rb != 4 || len(liveExecutors(a)) != 2 || len(liveExecutors(b)) != 4 {
			return fmt.Errorf("app of a %s, app of b %s; want 2 and 4 RUNNING", describeExecs(a), describeExecs(b))
		}
		qs, err := cl.c.Queues(callCtx(t, 5*time.Second))
		if err != nil {
			return err
		}
		if err := limitPassed(qs); err != nil {
			overLimit = append(overLimit, err.Error())
		}
		qa, _ := queueIn(qs, "a")
		qb, _ := queueIn(qs, "b")
		if qa.InUse.Cores != 2 || qb.InUse.Cores != 4 {
			return fmt.Errorf("GET /v1/queues: a uses %d cores, b %d; want 2 and 4", qa.InUse.Cores, qb.InUse.Cores)
		}
		return nil
	}
	testproc.Eventually(t, 30*time.Second, "queue a at 2 cores and b at 4 (weights 1 and 2 of 6 cores)", settled)
	if len(overLimit) > 0 {
		t.Errorf("a queue passed its limit on the way: %v", overLimit)
	}
	// Settled means settled: no more executors move for longer than the
	// delay and a grace.
	testproc.Stable(t, 3*delay, "the fair shares holding", settled)

	for who, c := range map[string]*client.Client{"the operator": cl.c, "tenant tb": cb} {
		qs, err := c.Queues(callCtx(t, 10*time.Second))
		if err != nil {
			t.Fatalf("GET /v1/queues as %s: %v", who, err)
		}
		if qs.Capacity.Cores != 6 {
			t.Errorf("GET /v1/queues as %s: capacity %+v, want 6 cores", who, qs.Capacity)
		}
		for _, w := range []struct {
			name          string
			weight        float64
			cores         int
			fairDominance float64
		}{{"a", 1, 2, 1.0 / 3}, {"b", 2, 4, 2.0 / 3}} {
			q, ok := queueIn(qs, w.name)
			switch {
			case !ok:
				t.Errorf("GET /v1/queues as %s lacks queue %s: %+v", who, w.name, qs.Queues)
			case q.Weight != w.weight || q.InUse.Cores != w.cores || q.FairShare.Cores != w.cores:
				t.Errorf("GET /v1/queues as %s, queue %s: weight %v, in use %+v, fair share %+v; want weight %v, %d cores of each",
					who, w.name, q.Weight, q.InUse, q.FairShare, w.weight, w.cores)
			case q.FairDominantShare < w.fairDominance-0.01 || q.FairDominantShare > w.fairDominance+0.01 ||
				q.DominantShare < w.fairDominance-0.01 || q.DominantShare > w.fairDominance+0.01:
				t.Errorf("GET /v1/queues as %s, queue %s: dominant share %v, fair dominant share %v; want %.3f",
					who, w.name, q.DominantShare, q.FairDominantShare, w.fairDominance)
			}
		}
		if err := limitPassed(qs); err != nil {
			t.Error(err)
		}
	}

	st := cl.mustStatus()
	a, _ := appStatus(st, appA)
	b, _ := appStatus(st, appB)
	if a.Queue != "a" || a.Tenant != "ta" || b.Queue != "b" || b.Tenant != "tb" {
		t.Errorf("apps' queue and tenant: %s %q/%q, %s %q/%q; want a/ta and b/tb", appA, a.Queue, a.Tenant, appB, b.Queue, b.Tenant)
	}
	// The most recent went first: a keeps its first two executors.
	if got := preemptedIDs(a, "b"); !slices.Equal(got, []int{2, 3, 4, 5}) {
		t.Errorf("executors of a preempted for queue b: %v, want the 4 most recent [2 3 4 5] (%s)", got, describeExecs(a))
	}
	if got := liveIDs(a); !slices.Equal(got, []int{0, 1}) {
		t.Errorf("executors of a left: %v, want its oldest [0 1]", got)
	}
	for _, e := range executorsIn(b, wire.ExecutorKilled) {
		t.Errorf("an executor of b was killed: %+v", e)
	}
	led.check(t, cl.c, "after the fair shares")
}

// TestQueuesPreemptionTimed times a preemption against --preemption-delay
// (2 s) on two workers of 2 cores: queue a holds all 4 (an older app of 2
// executors, then a newer one of 2); an app of queue b registers. The
// first executor of a ends KILLED, "preempted for queue b", no sooner than
// the delay after b's app was submitted and within the delay plus a
// second; the two taken are the newer app's (the most recent), which gets
// an executorPreempted event for each (the older app none); each got
// SIGTERM (recorded by its process, which then exits 143) after it was
// marked and before it ended; b gets its 2 cores. Not parallel: a timing
// measured alone on the machine.
func TestQueuesPreemptionTimed(t *testing.T) {
	const delay, grace = 2 * time.Second, time.Second
	cl := startCluster(t, clusterSpec{flags: queuesFlags(delay, grace), workers: []string{"w1", "w2"}, cores: 2, memory: "1g"})
	led := &auditLedger{}
	cl.setQueues(led, map[string]wire.QueueSpec{"a": {}, "b": {}})
	dir := t.TempDir()
	register := func(desc wire.AppDescription) (string, *appEvents) {
		t.Helper()
		id, err := cl.c.RegisterApp(callCtx(t, 30*time.Second), desc)
		if err != nil {
			t.Fatal(err)
		}
		led.operator(wire.MasterAPI.RegisterApp.Mux(), id)
		return id, followEvents(t, cl.c, id)
	}
	older, olderEvents := register(cl.termApp("older", "a", 2, dir, true))
	cl.runningApp(older, 2, 20*time.Second)
	newer, newerEvents := register(cl.termApp("newer", "a", 0, dir, true))
	cl.runningApp(newer, 2, 20*time.Second)

	appB, _ := register(cl.termApp("owed", "b", 0, dir, true))
	b, err := cl.c.App(callCtx(t, 10*time.Second), appB)
	if err != nil {
		t.Fatal(err)
	}
	submitted := b.SubmittedAt

	isPreemptedEnd := func(ev appEvent) bool {
		return ev.Executor != nil && ev.Executor.State == wire.ExecutorKilled && strings.HasPrefix(ev.Executor.Message, "preempted for queue b")
	}
	evs := newerEvents.waitFor(t, delay+15*time.Second, "two executors of the newer app KILLED, preempted for queue b", func(evs []appEvent) error {
		n := 0
		for _, ev := range evs {
			if isPreemptedEnd(ev) {
				n++
			}
		}
		if n < 2 {
			return fmt.Errorf("%d so far; events %s", n, eventTypes(evs))
		}
		return nil
	})
	var first *appEvent
	marked := map[int]time.Time{}
	ended := map[int]time.Time{}
	for i, ev := range evs {
		switch {
		case ev.Type == wire.EventExecutorPreempted:
			if ev.Executor == nil || !strings.HasPrefix(ev.Message, "preempted for queue b") {
				t.Errorf("executorPreempted event %+v (executor %+v), want a message \"preempted for queue b\"", ev.AppEvent, ev.Executor)
				continue
			}
			marked[ev.Executor.ID] = ev.Time
		case isPreemptedEnd(ev):
			if first == nil {
				first = &evs[i]
			}
			ended[ev.Executor.ID] = ev.Time
		}
	}
	took := first.Time.Sub(submitted)
	t.Logf("b's app submitted at %s; first executor of a KILLED (%q) %s later (delay %s)",
		submitted.Format("15:04:05.000"), first.Executor.Message, took.Round(time.Millisecond), delay)
	if took < delay {
		t.Errorf("an executor of a ended preempted %s after b's app was submitted: before the delay %s", took, delay)
	}
	if took > delay+time.Second {
		t.Errorf("the first executor of a ended preempted %s after b's app was submitted, want within the delay %s plus 1 s", took, delay)
	}
	if ids := slices.Sorted(maps.Keys(ended)); !slices.Equal(ids, []int{0, 1}) {
		t.Errorf("the newer app's executors ended preempted: %v, want both [0 1]", ids)
	}
	for id, end := range ended {
		mark, ok := marked[id]
		if !ok {
			t.Errorf("executor %d of the newer app ended preempted without an executorPreempted event (events %s)", id, newerEvents.types())
			continue
		}
		terms := sigterms(t, dir, newer, id)
		switch kills := termBursts(t, fmt.Sprintf("executor %d of the newer app", id), terms); {
		case kills != 1:
			t.Errorf("executor %d of the newer app was sent SIGTERM by %d kills (%v), want 1 (its grace %s before any SIGKILL)", id, kills, terms, grace)
		case terms[0].Before(mark.Add(-50*time.Millisecond)) || terms[0].After(end.Add(50*time.Millisecond)):
			t.Errorf("executor %d: SIGTERM at %s, marked at %s, ended at %s: want the SIGTERM between them",
				id, terms[0].Format("15:04:05.000"), mark.Format("15:04:05.000"), end.Format("15:04:05.000"))
		}
	}
	if pre := olderEvents.of(wire.EventExecutorPreempted); len(pre) > 0 {
		t.Errorf("the older app was told of preemptions: %+v", pre)
	}
	for id := range 2 {
		if terms := sigterms(t, dir, older, id); len(terms) > 0 {
			t.Errorf("executor %d of the older app got SIGTERM at %v", id, terms)
		}
	}
	st := cl.runningApp(appB, 2, 20*time.Second)
	o, _ := appStatus(st, older)
	if got := liveIDs(o); !slices.Equal(got, []int{0, 1}) || len(executorsIn(o, wire.ExecutorRunning)) != 2 {
		t.Errorf("the older app's executors after the preemption: %s, want 0 and 1 RUNNING", describeExecs(o))
	}
	n, _ := appStatus(st, newer)
	for _, e := range executorsIn(n, wire.ExecutorKilled) {
		if e.ExitCode == nil || *e.ExitCode != 143 {
			t.Errorf("preempted executor %d ended with exit code %v (%q), want 143: it exits by itself on SIGTERM, within its grace", e.ID, e.ExitCode, e.Message)
		}
	}
	led.check(t, cl.c, "after the preemption")
}
