package load

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/berth-cluster/berth/testkit/testcluster"
	"github.com/urfave/cli/v2"
)

// masterBin is the real master, built once for the scenario tests (or
// BERTHBENCH_MASTER_BIN, when set).
var masterBin string

func TestMain(m *testing.M) {
	if bin := os.Getenv("BERTHBENCH_MASTER_BIN"); bin != "" {
		masterBin = bin
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "berthbench-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bins, err := testcluster.Build("../..", dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	masterBin = bins.Master
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// runBerthbench runs berthbench with this package's subcommands in-process,
// its output to out.
func runBerthbench(out io.Writer, args ...string) error {
	app := &cli.App{Name: "berthbench", Writer: out, Commands: Commands(out)}
	return app.Run(append([]string{"berthbench"}, args...))
}

// runTool runs berthbench in-process and decodes its JSON report; results
// is decoded into res. Not in parallel: urfave/cli writes package state
// while it parses.
func runTool(t *testing.T, res any, args ...string) (*Report, string) {
	t.Helper()
	dir := t.TempDir()
	jsonPath := filepath.Join(dir, "report.json")
	var out bytes.Buffer
	argv := append(slices.Clone(args), "--master-bin", masterBin, "--work-dir", dir, "--json", jsonPath, "--csv", filepath.Join(dir, "out.csv"))
	if err := runBerthbench(&out, argv...); err != nil {
		t.Fatalf("berthbench %s: %v\n%s", strings.Join(args, " "), err, out.String())
	}
	data, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	var raw struct {
		Report
		Results json.RawMessage `json:"results"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw.Results, res); err != nil {
		t.Fatal(err)
	}
	rep := raw.Report
	if len(rep.Problems) > 0 {
		logs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
		for _, l := range logs {
			t.Logf("%s (last lines):\n%s", l, tail(l, 15))
		}
	}
	if rep.Machine.Cores == 0 || len(rep.Masters) == 0 || rep.Masters[0].SHA256 == "" || len(rep.Masters[0].Args) == 0 {
		t.Errorf("report lacks the machine or the master: %+v %+v", rep.Machine, rep.Masters)
	}
	// The CSV holds the first table.
	f, err := os.Open(filepath.Join(dir, "out.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil || len(rows) < 2 || len(rows[0]) != len(rep.Tables[0].Header) {
		t.Errorf("csv: %v, %d rows", err, len(rows))
	}
	return &rep, out.String()
}

func TestHeartbeatsScenario(t *testing.T) {
	var rows []hbRow
	rep, out := runTool(t, &rows, "heartbeats", "--workers", "5,20", "--duration", "3s", "--warmup", "500ms",
		"--worker-timeout", "1s", "--secret", "s3cret", "--recovery-mode", "none")
	if len(rows) != 2 {
		t.Fatalf("rows: %+v\n%s", rows, out)
	}
	for _, r := range rows {
		if !r.Held || r.FalseExpiries != 0 || r.NotAlive != 0 || r.ErrorsTotal != 0 || r.MasterRemoved != 0 {
			t.Errorf("W=%d not held: %+v\n%s", r.Workers, r, out)
		}
		if r.IntervalMs != 250 || r.OfferedPerSec != float64(r.Workers)*4 {
			t.Errorf("W=%d: interval %v ms, offered %v/s", r.Workers, r.IntervalMs, r.OfferedPerSec)
		}
		if r.AchievedPerSec < 0.9*r.OfferedPerSec || r.RTT.N == 0 || r.RTT.P50 <= 0 || r.RTT.P99 < r.RTT.P50 {
			t.Errorf("W=%d: achieved %v/s, rtt %+v", r.Workers, r.AchievedPerSec, r.RTT)
		}
		if r.MaxGapOfTimeout <= 0 || r.MaxGapOfTimeout >= 1 {
			t.Errorf("W=%d: max gap %v of the timeout", r.Workers, r.MaxGapOfTimeout)
		}
		if r.MasterLog == nil || r.MasterLog.Exit != "" {
			t.Errorf("W=%d: master log %+v", r.Workers, r.MasterLog)
		}
	}
	if len(rep.Problems) != 0 {
		t.Errorf("problems: %q", rep.Problems)
	}
	if !strings.Contains(out, "every size tried was held") {
		t.Errorf("verdict missing:\n%s", out)
	}
}

func TestWorkerLossScenario(t *testing.T) {
	var res lossResults
	rep, out := runTool(t, &res, "worker-loss", "--workers", "10", "--worker-cores", "8", "--app-fraction", "0.5",
		"--min-core-unit", "4", "--worker-timeout", "1s", "--repeat", "3", "--settle", "200ms")
	if len(res.Reps) != 3 || res.AppCores != 40 || res.FalseExpiries != 0 {
		t.Fatalf("results: %+v\n%s", res, out)
	}
	for _, r := range res.Reps {
		if r.Err != "" || r.LostCores <= 0 || r.LostExecutors <= 0 || r.ReplacementCores < r.LostCores {
			t.Errorf("rep %d: %+v", r.Rep, r)
		}
		// DEAD comes about a timeout after the last heartbeat, never before.
		if r.HeartbeatToDeadMs < 900 || r.HeartbeatToDeadMs > 3000 || r.KillToDeadMs <= 0 {
			t.Errorf("rep %d: last heartbeat → DEAD %v ms, kill → DEAD %v ms", r.Rep, r.HeartbeatToDeadMs, r.KillToDeadMs)
		}
		if r.DeadToAllMs > 1000 || r.DeadToRunningMs < r.DeadToAllMs-50 {
			t.Errorf("rep %d: DEAD → all launched %v ms, → running %v ms", r.Rep, r.DeadToAllMs, r.DeadToRunningMs)
		}
	}
	if s := res.Summary["DEAD→all launched"]; s.N != 3 {
		t.Errorf("summary: %+v", res.Summary)
	}
	if res.MasterLog == nil || res.MasterLog.RemovedWorkers != 3 {
		t.Errorf("the master should have removed exactly the 3 killed workers: %+v", res.MasterLog)
	}
	if len(rep.Problems) != 0 {
		t.Errorf("problems: %q", rep.Problems)
	}
}

func TestLaunchesScenario(t *testing.T) {
	for _, lease := range []string{"heartbeat", "stream"} {
		var res lnResults
		rep, out := runTool(t, &res, "launches", "--workers", "5", "--worker-cores", "16", "--apps", "10", "--app-cores", "4",
			"--cores-per-executor", "1", "--concurrency", "4", "--worker-timeout", "2s", "--lease", lease)
		if res.Executors != 40 || res.Running != 40 || res.Cores != 40 {
			t.Fatalf("%s: launched %d, running %d of %d\n%s", lease, res.Executors, res.Running, res.Cores, out)
		}
		if res.RegsPerSec <= 0 || res.LaunchesPerSec <= 0 || res.AllLaunchedMs < res.FirstLaunchMs || res.AllKilledMs <= 0 || res.LeaseErrors != 0 {
			t.Errorf("%s: %+v", lease, res)
		}
		if res.AppLaunched.N != 10 || res.RegLatency.N != 10 {
			t.Errorf("%s: per-app figures %+v %+v", lease, res.AppLaunched, res.RegLatency)
		}
		if len(rep.Problems) != 0 {
			t.Errorf("%s: problems: %q", lease, rep.Problems)
		}
	}
}

// A kill -9 of the leader of three masters: another leads at a higher
// epoch, then is ALIVE with every simulated worker, each of which
// registered again through whichever master answered.
func TestFleetFailoverScenario(t *testing.T) {
	var rows []ffRow
	rep, out := runTool(t, &rows, "fleet-failover", "--workers", "40", "--worker-timeout", "2s", "--alive-timeout", "30s")
	if len(rows) != 1 {
		t.Fatalf("rows: %+v\n%s", rows, out)
	}
	r := rows[0]
	if r.KilledID == "" || r.ToLeaderMs <= 0 || r.ToAliveMs < r.ToLeaderMs || r.ToAllWorkersMs < r.ToAliveMs {
		t.Errorf("kill → leader %v ms, → ALIVE %v ms, → all workers %v ms (killed %q)", r.ToLeaderMs, r.ToAliveMs, r.ToAllWorkersMs, r.KilledID)
	}
	if r.NotAlive != 0 || r.FalseExpiries != 0 || r.Reregistrations < 40 || r.IntervalMs != 500 {
		t.Errorf("after the failover: %+v", r)
	}
	if len(rep.Masters) != 3 {
		t.Errorf("masters reported: %+v", rep.Masters)
	}
	for _, p := range rep.Problems { // the killed leader's heartbeats fail, and are said to
		if !strings.Contains(p, "heartbeat") && !strings.Contains(p, "regist") {
			t.Errorf("problem: %s", p)
		}
	}
	if !strings.Contains(out, "a new leader was ALIVE with all 40 workers") {
		t.Errorf("verdict missing:\n%s", out)
	}
}

func TestFlagErrors(t *testing.T) {
	// The master binary these tests were given must not stand in for a
	// missing --master-bin.
	for _, name := range []string{"BERTHBENCH_MASTER_BIN", "BERTHLOAD_MASTER_BIN"} {
		t.Setenv(name, "") // restored after the test
		os.Unsetenv(name)
	}
	cases := [][]string{
		{"heartbeats"},
		{"heartbeats", "--master-bin", "x", "--master", "http://127.0.0.1:1"},
		{"heartbeats", "--master-bin", "/nonexistent/master"},
		{"heartbeats", "--master-bin", masterBin, "--workers", "0"},
		{"launches", "--master-bin", masterBin, "--workers", "1", "--worker-cores", "4", "--apps", "2", "--app-cores", "4"},
		{"worker-loss", "--master-bin", masterBin, "--workers", "2", "--worker-cores", "4", "--app-cores", "8"},
		{"launches", "--master-bin", masterBin, "--lease", "carrier-pigeon"},
		{"fleet-failover", "--master", "http://127.0.0.1:1"},
		{"fleet-failover", "--master-bin", masterBin, "--workers", "0"},
	}
	for _, args := range cases {
		var out bytes.Buffer
		if err := runBerthbench(&out, args...); err == nil {
			t.Errorf("%q: accepted", args)
		}
	}
}
