package e2e

// The helpers of the queues_* tests (the shared cluster, issue 20):
// queues and tenants made by the operator, tenants' clients, executors
// that record their SIGTERMs, lookups in GET /v1/queues, and a ledger of
// the writes a test made to check the audit log against.

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/berth-cluster/berth/client"
	"github.com/berth-cluster/berth/internal/poll"
	"github.com/berth-cluster/berth/wire"
)

// queuesFlags are the masters' flags of these tests: a short preemption
// delay and grace (defaults 30 s each), and a worker timeout short enough
// for a tick of 250 ms (the loop's tick re-runs a round that owes
// capacity) yet long enough for a loaded machine.
func queuesFlags(delay, grace time.Duration, more ...string) []string {
	return append([]string{"--worker-timeout", "5s", "--preemption-delay", delay.String(), "--preemption-grace", grace.String()}, more...)
}

// tenantClient is a client of the masters that acts for a tenant, with its
// token instead of the operator secret.
func tenantClient(t *testing.T, token string, masters ...string) *client.Client {
	t.Helper()
	c, err := client.New(masters, "", client.WithToken(token), client.WithRetryBudget(20*time.Second), bin.PKI.ClientOption())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func weightOf(w float64) *float64 { return &w }

// setQueues creates (or changes) queues as the operator, and notes each
// write in the ledger.
func (cl *cluster) setQueues(led *auditLedger, specs map[string]wire.QueueSpec) {
	cl.t.Helper()
	for _, name := range slices.Sorted(maps.Keys(specs)) {
		if _, err := cl.c.PutQueue(callCtx(cl.t, 30*time.Second), name, specs[name]); err != nil {
			cl.t.Fatalf("operator setting queue %s: %v", name, err)
		}
		led.operator(wire.MasterAPI.PutQueue.Mux(), name)
	}
}

// createTenant makes a tenant as the operator and returns its token.
func (cl *cluster) createTenant(led *auditLedger, name string, queues ...string) string {
	cl.t.Helper()
	created, err := cl.c.CreateTenant(callCtx(cl.t, 30*time.Second), name, wire.TenantSpec{Queues: queues})
	if err != nil {
		cl.t.Fatalf("operator creating tenant %s: %v", name, err)
	}
	if created.Name != name || !strings.HasPrefix(created.Token, wire.TenantTokenPrefix+name+".") {
		cl.t.Fatalf("tenant %s created as %+v", name, created)
	}
	led.operator(wire.MasterAPI.CreateTenant.Mux(), name)
	return created.Token
}

// termApp is an app in queue q of one-core, 64 MB executors (up to
// maxCores; 0: as many as it can get) whose process, a shell, records each
// SIGTERM it gets as a line (the time, in ns since the epoch) in
// dir/<app>.<executor>, then exits 143 (exitOnTerm) or carries on until
// SIGKILLed. Its command line carries the cluster's marker and
// "<app>/<executor>" (cl.execPids finds it).
func (cl *cluster) termApp(name, q string, maxCores int, dir string, exitOnTerm bool) wire.AppDescription {
	f := filepath.Join(dir, wire.PlaceholderAppID+"."+wire.PlaceholderExecutorID)
	onTerm := "date +%s%N >> " + f
	if exitOnTerm {
		onTerm += "; exit 143"
	}
	script := "trap '" + onTerm + "' TERM; echo started " + wire.PlaceholderExecutorID + "; " +
		"while :; do sleep 3600 & wait $!; done; : " + cl.marker + " " + wire.PlaceholderAppID + "/" + wire.PlaceholderExecutorID
	return wire.AppDescription{
		Name:                name,
		Command:             []string{"/bin/sh", "-c", script},
		MaxCores:            maxCores,
		CoresPerExecutor:    1,
		MemoryPerExecutorMB: 64,
		ProcessSpec:         wire.ProcessSpec{Queue: q},
	}
}

// sigterms returns the SIGTERMs executor exec of app got, as termApp's
// process recorded them.
func sigterms(t *testing.T, dir, appID string, exec int) []time.Time {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, appID+"."+strconv.Itoa(exec)))
	if os.IsNotExist(err) {
		return nil
	} else if err != nil {
		t.Fatal(err)
	}
	var out []time.Time
	for _, line := range strings.Fields(string(data)) {
		ns, err := strconv.ParseInt(line, 10, 64)
		if err != nil {
			t.Fatalf("SIGTERM record of %s/%d: %q", appID, exec, data)
		}
		out = append(out, time.Unix(0, ns))
	}
	return out
}

// termBursts counts the kills behind an executor's SIGTERM records: the
// records within 200 ms of the one before are one kill's. A worker sends
// a kill's SIGTERM to the process group and to the process itself
// (worker/procs.go, signalLocked), and the shell may record both.
func termBursts(t *testing.T, what string, terms []time.Time) int {
	t.Helper()
	n := 0
	for i, at := range terms {
		if i == 0 || at.Sub(terms[i-1]) > 200*time.Millisecond {
			n++
		}
	}
	if len(terms) > n {
		t.Logf("%s recorded %d SIGTERMs for %d kills: %v", what, len(terms), n, terms)
	}
	return n
}

// queueIn finds a queue in GET /v1/queues.
func queueIn(qs wire.Queues, name string) (wire.QueueStatus, bool) {
	for _, q := range qs.Queues {
		if q.Name == name {
			return q, true
		}
	}
	return wire.QueueStatus{}, false
}

// queueSettings is what a queue was set to, by name: what no refused
// request may change.
func queueSettings(qs wire.Queues) map[string]string {
	out := map[string]string{}
	for _, q := range qs.Queues {
		limit := "none"
		if q.Limit != nil {
			limit = fmt.Sprintf("%+v", *q.Limit)
		}
		out[q.Name] = fmt.Sprintf("weight %v guarantee %+v limit %s preempt %v", q.Weight, q.Guarantee, limit, q.Preempt)
	}
	return out
}

// preemptedIDs lists the ids of an app's executors that ended KILLED as
// preempted for queue owed, sorted.
func preemptedIDs(a wire.AppStatus, owed string) []int {
	var out []int
	for _, e := range executorsIn(a, wire.ExecutorKilled) {
		if strings.HasPrefix(e.Message, "preempted for queue "+owed) {
			out = append(out, e.ID)
		}
	}
	sort.Ints(out)
	return out
}

// liveIDs lists the ids of an app's LAUNCHING or RUNNING executors, sorted.
func liveIDs(a wire.AppStatus) []int {
	var out []int
	for _, e := range liveExecutors(a) {
		out = append(out, e.ID)
	}
	sort.Ints(out)
	return out
}

// auditLedger is what a test wrote, as the audit log must show it.
type auditLedger struct {
	mu   sync.Mutex
	want []wire.AuditEntry
}

// add notes a write: its principal (as wire.AuditEntry names it), the
// tenant it acts for, route (a mux pattern, "PUT /v1/queues/{id}"),
// target and outcome ("ok" or an error code).
func (l *auditLedger) add(principal, tenant, route, target, outcome string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.want = append(l.want, wire.AuditEntry{Principal: principal, Tenant: tenant, Route: route, Target: target, Outcome: outcome})
}

// operator notes a successful write of the operator (the secret).
func (l *auditLedger) operator(route, target string) { l.add("secret", "", route, target, "ok") }

// tenant notes a write of a tenant.
func (l *auditLedger) tenant(name, route, target, outcome string) {
	l.add("tenant:"+name, name, route, target, outcome)
}

// missing returns the noted writes that entries lack (each entry matches
// one write at most), and the entries no write matched.
func (l *auditLedger) missing(entries []wire.AuditEntry) (lacking, unmatched []wire.AuditEntry) {
	l.mu.Lock()
	defer l.mu.Unlock()
	used := make([]bool, len(entries))
	for _, w := range l.want {
		found := false
		for i, e := range entries {
			if !used[i] && e.Principal == w.Principal && e.Tenant == w.Tenant && e.Route == w.Route && e.Target == w.Target && e.Outcome == w.Outcome {
				used[i], found = true, true
				break
			}
		}
		if !found {
			lacking = append(lacking, w)
		}
	}
	for i, e := range entries {
		if !used[i] {
			unmatched = append(unmatched, e)
		}
	}
	return lacking, unmatched
}

// check fails the test for each noted write that GET /v1/audit (through
// c, an operator's client) does not show within a few seconds (a
// follower's replica may trail the leader's); it returns the entries.
func (l *auditLedger) check(t *testing.T, c *client.Client, where string) []wire.AuditEntry {
	t.Helper()
	var entries, lacking, unmatched []wire.AuditEntry
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := poll.UntilNil(ctx, 100*time.Millisecond, func() error {
		audit, err := c.Audit(ctx, 0, "")
		if err != nil {
			return err
		}
		entries = audit.Entries
		lacking, unmatched = l.missing(entries)
		if len(lacking) > 0 {
			return fmt.Errorf("%d writes missing", len(lacking))
		}
		return nil
	})
	if entries == nil && err != nil {
		t.Errorf("%s: GET /v1/audit: %v", where, err)
		return nil
	}
	// One line per kind of miss: a write recorded with another outcome,
	// or not at all.
	misses := map[string][]string{}
	var kinds []string
	for _, w := range lacking {
		got := "no entry"
		for _, e := range unmatched {
			if e.Principal == w.Principal && e.Tenant == w.Tenant && e.Route == w.Route && e.Target == w.Target {
				got = fmt.Sprintf("outcome %q (status %d)", e.Outcome, e.Status)
				break
			}
		}
		kind := fmt.Sprintf("%s by %s (tenant %q) with outcome %q: %s", w.Route, w.Principal, w.Tenant, w.Outcome, got)
		if misses[kind] == nil {
			kinds = append(kinds, kind)
		}
		misses[kind] = append(misses[kind], strconv.Quote(w.Target))
	}
	for _, k := range kinds {
		t.Errorf("%s: the audit log lacks %s, on %s", where, k, strings.Join(misses[k], ", "))
	}
	if len(lacking) > 0 {
		t.Logf("%s: the audit log holds:\n%s", where, describeAudit(entries))
	}
	return entries
}

func describeAudit(entries []wire.AuditEntry) string {
	var b strings.Builder
	for _, e := range entries {
		fmt.Fprintf(&b, "  %s %s tenant=%q %s target=%q %s %d\n", e.Time.Format("15:04:05.000"), e.Principal, e.Tenant, e.Route, e.Target, e.Outcome, e.Status)
	}
	return b.String()
}
