package failover

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestRatios(t *testing.T) {
	res := []SubmitResult{
		{Setup: setupRaft, Concurrency: 1, PerSecond: 500},
		{Setup: setupRaftFollower, Concurrency: 1, PerSecond: 480},
		{Setup: setupRaft, Concurrency: 8, PerSecond: 1500},
		{Setup: setupBolt, Concurrency: 1, PerSecond: 2000},
		{Setup: setupBolt, Concurrency: 8, PerSecond: 3000},
		{Setup: setupBoltPlain, Concurrency: 8, PerSecond: 4000},
	}
	got := ratios(res)
	want := []Ratio{{1, 500, 2000, 0.25}, {8, 1500, 3000, 0.5}}
	if !slices.Equal(got, want) {
		t.Errorf("ratios = %+v, want %+v", got, want)
	}
	if got, want := tlsCosts(res), []TLSCost{{8, 3000, 4000, 0.75}}; !slices.Equal(got, want) {
		t.Errorf("TLS costs = %+v, want %+v", got, want)
	}
}

func TestSummarizeRounds(t *testing.T) {
	rounds := []Round{
		{N: 1, elected: 1 * time.Second, leading: 1100 * time.Millisecond, workers: 1200 * time.Millisecond, app: 1500 * time.Millisecond, alive: 1500 * time.Millisecond, RestartMs: 80},
		{N: 2, elected: 2 * time.Second, leading: 2100 * time.Millisecond, workers: 2200 * time.Millisecond, app: 2500 * time.Millisecond, alive: 2500 * time.Millisecond, RestartMs: 120},
		{N: 3, Problems: []string{"no ALIVE leader"}},
	}
	fs := summarizeRounds(scenarioKill, rounds)
	if fs.Rounds != 3 || fs.Completed != 2 || fs.Alive.N != 2 || fs.Alive.Max != 2500 || fs.Elected.Min != 1000 {
		t.Errorf("summary %+v", fs)
	}
	if fs.App == nil || fs.App.P50 != 1500 || fs.OldExit != nil || fs.Restart.Max != 120 {
		t.Errorf("app %+v, old exit %+v, restart %+v", fs.App, fs.OldExit, fs.Restart)
	}
	if len(fs.Problems) != 1 || !strings.Contains(fs.Problems[0], "round 3") {
		t.Errorf("problems %v", fs.Problems)
	}
}
