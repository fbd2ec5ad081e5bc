package failover

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func msd(v ...int) []time.Duration {
	out := make([]time.Duration, len(v))
	for i, x := range v {
		out[i] = time.Duration(x) * time.Millisecond
	}
	return out
}

func TestSlowRounds(t *testing.T) {
	ds := msd(2000, 2100, 1900, 2050, 4500, 2000, 9000)
	// median 2050: limit max(4100, 3050) = 4100.
	if got := slowRounds(ds, 0); !slices.Equal(got, []int{4, 6}) {
		t.Errorf("slow = %v", got)
	}
	if got := slowRounds(ds, 5*time.Second); !slices.Equal(got, []int{6}) {
		t.Errorf("slow over 5s = %v", got)
	}
	// Short rounds: a second above the median is needed, not just twice it.
	if got := slowRounds(msd(100, 120, 250, 110), 0); got != nil {
		t.Errorf("slow among short rounds = %v", got)
	}
	if slowRounds(nil, 0) != nil {
		t.Error("slow rounds of nothing")
	}
}

func TestRatios(t *testing.T) {
	res := []SubmitResult{
		{Setup: setupRaft, Concurrency: 1, PerSecond: 500},
		{Setup: setupRaftFollower, Concurrency: 1, PerSecond: 480},
		{Setup: setupRaft, Concurrency: 8, PerSecond: 1500},
		{Setup: setupBolt, Concurrency: 1, PerSecond: 2000},
		{Setup: setupBolt, Concurrency: 8, PerSecond: 3000},
	}
	got := ratios(res)
	want := []Ratio{{1, 500, 2000, 0.25}, {8, 1500, 3000, 0.5}}
	if !slices.Equal(got, want) {
		t.Errorf("ratios = %+v, want %+v", got, want)
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

func TestLineTime(t *testing.T) {
	at, ok := lineTime(`time=2026-11-22T03:53:16.123Z level=INFO msg="entering candidate state" component=raft`)
	if !ok || at.Nanosecond() != 123000000 || at.Second() != 16 {
		t.Errorf("slog line: %v %v", at, ok)
	}
	at, ok = lineTime("# berthbench: m1 started 2026-11-22T03:53:16.5+00:00: /bin/master --node-id m1")
	if !ok || at.Nanosecond() != 500000000 {
		t.Errorf("header line: %v %v", at, ok)
	}
	if _, ok := lineTime("goroutine 1 [running]:"); ok {
		t.Error("a line without a time has one")
	}
}

func TestMergeLogs(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.log")
	b := filepath.Join(dir, "b.log")
	os.WriteFile(a, []byte("time=2026-01-01T00:00:01.000Z msg=a1\ntime=2026-01-01T00:00:03.000Z msg=a3\n  trace of a3\ntime=2026-01-01T00:00:09.000Z msg=a9\n"), 0o644)
	os.WriteFile(b, []byte("time=2026-01-01T00:00:00.000Z msg=b0\ntime=2026-01-01T00:00:02.000Z msg=b2\n"), 0o644)
	from := time.Date(2026, 1, 1, 0, 0, 1, 0, time.UTC)
	out := filepath.Join(dir, "merged")
	if err := mergeLogs([]string{a, b}, from, from.Add(5*time.Second), out); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(out)
	var msgs []string
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n")[1:] {
		f := strings.Fields(l)
		msgs = append(msgs, f[0]+" "+f[len(f)-1])
	}
	want := []string{"a.log msg=a1", "b.log msg=b2", "a.log msg=a3", "a.log a3"}
	if !slices.Equal(msgs, want) {
		t.Errorf("merged:\n%s\nwant %v", data, want)
	}
}

func TestProcStartAndChildren(t *testing.T) {
	if _, ok := procStart(os.Getpid()); !ok {
		t.Error("no start time for this process")
	}
	kids := childrenOf(map[int]bool{os.Getppid(): true})
	if _, ok := kids[os.Getpid()]; !ok {
		t.Error("this process is not among its parent's children")
	}
}

func TestConfigCheck(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"master", "worker"} {
		os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"), 0o755)
	}
	good := func() *config {
		return &config{bin: dir, scenarios: []string{"kill", "submit"}, masters: 3, workers: 10, workerCores: 2, executors: 10,
			rounds: 20, handoverRounds: 20, submitCount: 10, submitConcurrency: []int{1}, raftMultiplier: 1,
			poll: time.Millisecond, roundTimeout: time.Minute, maxTime: time.Minute}
	}
	if err := good().check(); err != nil {
		t.Fatalf("good config: %v", err)
	}
	for name, mut := range map[string]func(*config){
		"even masters":    func(c *config) { c.masters = 4 },
		"one master":      func(c *config) { c.masters = 1 },
		"scenario":        func(c *config) { c.scenarios = []string{"explode"} },
		"executors":       func(c *config) { c.executors = 21 },
		"no binaries":     func(c *config) { c.bin = t.TempDir() },
		"zero poll":       func(c *config) { c.poll = 0 },
		"concurrency":     func(c *config) { c.submitConcurrency = []int{0} },
		"submit workers":  func(c *config) { c.submitWorkers = 201 },
		"raft multiplier": func(c *config) { c.raftMultiplier = 11 },
	} {
		c := good()
		mut(c)
		if c.check() == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	// Each subcommand's config is checked on its own flags only.
	submissions := &config{bin: dir, scenarios: []string{"submit"}, masters: 3, workerCores: 2,
		submitCount: 10, submitConcurrency: []int{1}, raftMultiplier: 1, maxTime: time.Minute}
	if err := submissions.check(); err != nil {
		t.Errorf("submissions config: %v", err)
	}
}
