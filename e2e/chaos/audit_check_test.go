package chaos

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/berth-cluster/berth/wire"
)

// The audit checks must tell masters that disagree from masters that lag,
// and an acknowledged write without its entry, or an entry of success
// for a request refused, from a log that matches the history.

func entries(from, to int) []wire.AuditEntry {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var out []wire.AuditEntry
	for i := from; i < to; i++ {
		out = append(out, wire.AuditEntry{Time: t0.Add(time.Duration(i) * time.Millisecond), Principal: "secret",
			Route: "POST /v1/apps", Target: fmt.Sprintf("app-%d", i), Outcome: "ok", Status: 200})
	}
	return out
}

func TestAuditLinesUpAnswers(t *testing.T) {
	aw := &auditWatch{pos: map[string]int{}}
	aw.merge("m1", entries(0, 10), false)
	aw.merge("m2", entries(0, 6), false)  // a lagging follower
	aw.merge("m3", entries(4, 15), false) // ahead
	aw.merge("m1", entries(8, 15), false)
	if len(aw.problems) != 0 || len(aw.seq) != 15 {
		t.Fatalf("consistent answers: problems %v, %d entries", aw.problems, len(aw.seq))
	}
	other := entries(11, 13)
	other[0].Target = "app-x" // a master with another entry in its place
	aw.merge("m2", other, false)
	if len(aw.problems) != 1 {
		t.Fatalf("a divergent answer passed: %v", aw.problems)
	}
	aw.problems = nil
	aw.merge("m2", append(entries(100, 101), entries(12, 14)...), false) // an entry none had, in the middle
	if len(aw.problems) != 1 {
		t.Fatalf("an answer with an extra entry passed: %v", aw.problems)
	}
}

func TestAuditChecksHistory(t *testing.T) {
	rec := &recorder{start: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	reg := porcupine.Operation{Input: input{kind: opRegister, key: "k1", by: "tenant:alpha"}, Output: output{id: "app-1"}, Call: 0, Return: 10}
	kill := porcupine.Operation{Input: input{kind: opKill, key: "k1", id: "app-1", by: "tenant:alpha"}, Output: output{state: "KILLED", ended: true}, Call: 20, Return: 30}
	probe := porcupine.Operation{Input: input{kind: opKill, key: "k1", id: "app-1", by: "tenant:beta", probe: true}, Output: output{status: 403}, Call: 40, Return: 50}
	entry := func(principal, route, target, outcome string, status int) wire.AuditEntry {
		return wire.AuditEntry{Time: rec.start, Principal: principal, Tenant: strings.TrimPrefix(principal, "tenant:"), Route: route, Target: target, Outcome: outcome, Status: status}
	}
	api := wire.MasterAPI
	okReg := entry("tenant:alpha", api.RegisterApp.Mux(), "app-1", "ok", 200)
	okKill := entry("tenant:alpha", api.KillApp.Mux(), "app-1", "ok", 200)
	for _, c := range []struct {
		name string
		log  []wire.AuditEntry
		ok   bool
	}{
		{"AcceptsAMatchingLog", []wire.AuditEntry{okReg, okKill}, true},
		{"CatchesAMissingEntry", []wire.AuditEntry{okReg}, false},
		{"CatchesAnEntryUnderAnotherPrincipal", []wire.AuditEntry{entry("secret", api.RegisterApp.Mux(), "app-1", "ok", 200), okKill}, false},
		{"CatchesAForbiddenKillRecordedAsDone", []wire.AuditEntry{okReg, okKill, entry("tenant:beta", api.KillApp.Mux(), "app-1", "ok", 200)}, false},
		{"CatchesAKillRecordedTwice", []wire.AuditEntry{okReg, okKill, okKill}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			aw := &auditWatch{seq: c.log}
			_, problems := aw.checkAudit([]porcupine.Operation{reg, kill, probe}, rec, &leaderWatch{})
			if (len(problems) == 0) != c.ok {
				t.Fatalf("problems: %v", problems)
			}
		})
	}
}
