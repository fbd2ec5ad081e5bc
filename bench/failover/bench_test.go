package failover

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/berth-cluster/berth/testkit/testcluster"
)

// TestScenarios runs the real binaries: 3 masters and 2 workers, 2 rounds
// of kill and of handover, and a tiny submit.
func TestScenarios(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	// BERTHBENCH_BIN: binaries built already (say, of another revision).
	bin := os.Getenv("BERTHBENCH_BIN")
	if bin == "" {
		bin = t.TempDir()
		if _, err := testcluster.Build("../..", bin); err != nil {
			t.Fatal(err)
		}
	}
	cfg := &config{
		bin: bin, dir: t.TempDir(), scenarios: []string{scenarioKill, scenarioHandover, scenarioSubmit},
		masters: 3, workers: 2, workerCores: 2, workerMemory: "1g", executors: 2,
		raftMultiplier: 1, logLevel: "info", poll: 10 * time.Millisecond, roundTimeout: 30 * time.Second,
		settle: 100 * time.Millisecond, rounds: 2, handoverRounds: 2,
		submitCount: 40, submitConcurrency: []int{1, 4}, submitBolt: true, submitViaFollower: true,
		maxTime: 3 * time.Minute,
	}
	if err := cfg.check(); err != nil {
		t.Fatal(err)
	}
	ps := &procs{}
	defer ps.killAll()
	var progress []string
	rep, err := execute(context.Background(), cfg, ps, []string{"test"}, func(s string) {
		progress = append(progress, s)
		t.Log(s)
	})
	if rep != nil {
		var b strings.Builder
		rep.print(&b)
		t.Log(b.String())
	}
	if err != nil {
		t.Fatalf("execute: %v", err)
	}
	if left := ps.running(); len(left) > 0 {
		t.Errorf("%d processes left running", len(left))
	}

	if len(rep.Failovers) != 2 {
		t.Fatalf("%d failover scenarios", len(rep.Failovers))
	}
	for _, f := range rep.Failovers {
		if f.Rounds != 2 || f.Completed != 2 || len(f.Problems) > 0 {
			t.Errorf("%s: %d rounds, %d completed, problems %v", f.Scenario, f.Rounds, f.Completed, f.Problems)
		}
	}
	for _, r := range rep.Rounds {
		if r.NewEpoch <= r.OldEpoch || r.NewLeader == "" || r.NewLeader == r.Victim {
			t.Errorf("%s round %d: %s (epoch %d) → %s (epoch %d)", r.Scenario, r.N, r.Victim, r.OldEpoch, r.NewLeader, r.NewEpoch)
		}
		// Sane: ordered milestones, within the round timeout. A SIGKILL is
		// noticed after Raft's heartbeat timeout (1 s at multiplier 1).
		if !(r.ElectedMs > 0 && r.ElectedMs <= r.LeadingMs && r.LeadingMs <= r.AliveMs && r.WorkersMs <= r.AliveMs && r.AliveMs < 30000) {
			t.Errorf("%s round %d: elected %v, leading %v, workers %v, alive %v", r.Scenario, r.N, r.ElectedMs, r.LeadingMs, r.WorkersMs, r.AliveMs)
		}
		if r.Scenario == scenarioKill && r.ElectedMs < 500 {
			t.Errorf("kill round %d: a new leader %v ms after a SIGKILL, before any timeout", r.N, r.ElectedMs)
		}
		if r.Scenario == scenarioHandover && (r.OldExitMs <= 0 || r.OldExitMs > 10000) {
			t.Errorf("handover round %d: old leader exited after %v ms", r.N, r.OldExitMs)
		}
	}
	if rep.App == nil || len(rep.App.Incidents) > 0 || rep.App.Events["masterChanged"] < 4 {
		t.Errorf("app: %+v", rep.App)
	}

	if len(rep.Submit) != 8 { // raft-3, via follower, bolt-1 with and without TLS, at 2 concurrencies
		t.Fatalf("%d submit results", len(rep.Submit))
	}
	if len(rep.TLSCost) != 2 {
		t.Errorf("TLS costs %+v, want one per concurrency", rep.TLSCost)
	}
	for _, s := range rep.Submit {
		if s.Count != 40 || s.Errors+s.KillErrors > 0 || s.PerSecond <= 0 || s.Latency.P50 <= 0 || s.KillPerSecond <= 0 {
			t.Errorf("submit %+v", s)
		}
		if s.Setup == setupRaftFollower && s.Redirects != s.Count {
			t.Errorf("via follower: %d redirects for %d registrations", s.Redirects, s.Count)
		}
	}
	if len(rep.Ratios) != 2 {
		t.Errorf("ratios %+v", rep.Ratios)
	}
	if rep.Machine.Cores == 0 || rep.Machine.GoBinaries == "" || len(rep.Clusters) != 4 { // failover, raft-3, bolt-1 with and without TLS
		t.Errorf("machine %+v, clusters %d", rep.Machine, len(rep.Clusters))
	}
	for _, c := range rep.Clusters {
		for _, args := range c.Masters {
			if strings.Contains(strings.Join(args, " "), cfg.secret) {
				t.Errorf("the secret is printed: %v", args)
			}
		}
	}
	if _, err := os.Stat(cfg.dir); err != nil {
		t.Error(err)
	}
}
