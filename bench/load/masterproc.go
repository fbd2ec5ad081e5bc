package load

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/berth-cluster/berth/bench/internal/benchstat"
	"github.com/berth-cluster/berth/internal/httpx"
	"github.com/berth-cluster/berth/testkit/testcluster"
	"github.com/berth-cluster/berth/wire"
)

// masterOpts say how to start a master process.
type masterOpts struct {
	Bin           string
	RecoveryMode  string // none or bolt
	Secret        string
	WorkerTimeout time.Duration
	MinCoreUnit   int
	Extra         []string // more master flags, passed as given
	Dir           string   // for its log and data
}

// masterProc is a master this tool started; only it is ever stopped, by pid.
type masterProc struct {
	proc    *testcluster.Proc
	URL     string
	Args    []string
	LogPath string
}

// startMaster runs the master on 127.0.0.1 with a port the kernel picks,
// logging JSON to a file, and waits until it is the ALIVE leader. It dies
// with this tool, and host kills it if nothing stopped it before.
func startMaster(ctx context.Context, host testcluster.Host, o masterOpts, name string) (*masterProc, error) {
	if err := os.MkdirAll(o.Dir, 0o700); err != nil {
		return nil, err
	}
	args := []string{
		"--host", "127.0.0.1", "--port", "0",
		"--recovery-mode", o.RecoveryMode,
		"--worker-timeout", o.WorkerTimeout.String(),
		"--min-core-unit", strconv.Itoa(o.MinCoreUnit),
		"--log-format", "json", "--log-level", "info",
	}
	if o.RecoveryMode == "bolt" {
		args = append(args, "--data-dir", filepath.Join(o.Dir, name+"-data"))
	}
	args = append(args, o.Extra...)
	// A fresh log: its "master serving" line and its warnings are this
	// run's, even in a work directory used before.
	logPath := filepath.Join(o.Dir, name+".log")
	if err := os.WriteFile(logPath, nil, 0o644); err != nil {
		return nil, err
	}
	// Its configuration is the flags above: no BERTH_* variable of ours
	// leaks in, and the secret goes through the environment, not argv.
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "BERTH_") {
			env = append(env, kv)
		}
	}
	if o.Secret != "" {
		env = append(env, "BERTH_SECRET="+o.Secret)
	}
	p, err := testcluster.Start(host, name, o.Bin, logPath, args, testcluster.ProcOptions{Env: env, CleanEnv: true})
	if err != nil {
		return nil, fmt.Errorf("starting the master %s: %w", o.Bin, err)
	}
	m := &masterProc{proc: p, Args: args, LogPath: logPath}
	fail := func(err error) (*masterProc, error) {
		m.stop()
		return nil, fmt.Errorf("%w\nmaster log %s:\n%s", err, logPath, tail(logPath, 20))
	}
	// The address: from the "master serving" line (the port is the kernel's).
	deadline := time.Now().Add(20 * time.Second)
	err = awaitStart(ctx, p, deadline, "the master did not say where it serves within 20s", func() bool {
		m.URL = servingAddress(logPath)
		return m.URL != ""
	})
	if err != nil {
		return fail(err)
	}
	client := httpx.NewClient(o.Secret, 2*time.Second)
	ready := wire.MasterAPI.Ready
	err = awaitStart(ctx, p, deadline, "the master was not ready (GET /readyz) within 20s", func() bool {
		resp, err := client.Open(ctx, ready.Method, m.URL+ready.Path(), nil)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return true
	})
	if err != nil {
		return fail(err)
	}
	return m, nil
}

// awaitStart polls ready every 20 ms until it holds. It fails as soon as
// the master exits or ctx ends, and with notReady once deadline passed.
func awaitStart(ctx context.Context, p *testcluster.Proc, deadline time.Time, notReady string, ready func() bool) error {
	for !ready() {
		select {
		case <-p.Done():
			return fmt.Errorf("the master exited at start: %v", p.Err())
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return errors.New(notReady)
		}
	}
	return nil
}

func servingAddress(logPath string) string {
	data, err := os.ReadFile(logPath)
	if err != nil {
		return ""
	}
	for line := range bytes.Lines(data) {
		var rec struct {
			Msg     string `json:"msg"`
			Address string `json:"address"`
		}
		if json.Unmarshal(line, &rec) == nil && rec.Msg == "master serving" && rec.Address != "" {
			return rec.Address
		}
	}
	return ""
}

// logTime finds the first line logged at or after after with message msg
// about worker, and returns its time stamp (the master's clock: the same
// host's).
func (m *masterProc) logTime(msg, worker string, after time.Time) (time.Time, bool) {
	data, err := os.ReadFile(m.LogPath)
	if err != nil {
		return time.Time{}, false
	}
	for line := range bytes.Lines(data) {
		if !bytes.Contains(line, []byte(worker)) {
			continue
		}
		var rec struct {
			Time   time.Time `json:"time"`
			Msg    string    `json:"msg"`
			Worker string    `json:"worker"`
		}
		if json.Unmarshal(line, &rec) == nil && rec.Msg == msg && rec.Worker == worker && !rec.Time.Before(after) {
			return rec.Time, true
		}
	}
	return time.Time{}, false
}

// stop sends SIGTERM to the master's pid, waits up to 10 s for it to drain,
// then kills it. It returns the exit status ("" for a clean exit).
func (m *masterProc) stop() string {
	if m.proc.Signal(syscall.SIGTERM) == nil {
		select {
		case <-m.proc.Done():
		case <-time.After(10 * time.Second):
			m.proc.Kill()
			return "killed: did not stop within 10s of SIGTERM"
		}
	}
	if err := m.proc.Err(); err != nil {
		return err.Error()
	}
	return ""
}

// cpuTicks is the master's user+system CPU time so far, in clock ticks; -1
// when unknown.
func (m *masterProc) cpuTicks() int64 {
	st, ok := benchstat.ReadProcStat(m.proc.Pid())
	if !ok {
		return -1
	}
	return st.CPUTicks
}

// selfCPU is this process's user+system CPU time.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// rssMB is a process's resident memory, from /proc; -1 when unknown.
func rssMB(pid int) float64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, err := strconv.ParseFloat(f[1], 64)
			if err == nil {
				return kb / 1024
			}
		}
	}
	return -1
}

// MasterLog summarizes what the master logged: what went wrong shows here.
type MasterLog struct {
	Path           string         `json:"path"`
	Lines          int            `json:"lines"`
	RemovedWorkers int            `json:"removedWorkers"` // "removing worker": declared DEAD
	Warnings       map[string]int `json:"warnings,omitempty"`
	Errors         map[string]int `json:"errors,omitempty"`
	// Other is lines that are not the master's JSON log: a panic, a fatal
	// error, a race report.
	Other []string `json:"other,omitempty"`
	Exit  string   `json:"exit,omitempty"` // how it ended, "" for a clean exit
}

func scanMasterLog(path string) MasterLog {
	ml := MasterLog{Path: path, Warnings: map[string]int{}, Errors: map[string]int{}}
	f, err := os.Open(path)
	if err != nil {
		ml.Other = append(ml.Other, err.Error())
		return ml
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		ml.Lines++
		var rec struct {
			Level string `json:"level"`
			Msg   string `json:"msg"`
		}
		if json.Unmarshal(sc.Bytes(), &rec) != nil || rec.Level == "" {
			if len(ml.Other) < 40 {
				ml.Other = append(ml.Other, sc.Text())
			}
			continue
		}
		if rec.Msg == "removing worker" {
			ml.RemovedWorkers++
		}
		switch rec.Level {
		case "WARN":
			ml.Warnings[rec.Msg]++
		case "ERROR":
			ml.Errors[rec.Msg]++
		}
	}
	return ml
}

// problems lists the log's notable entries, one per line, for the report.
func (ml MasterLog) problems(expectedWarnings ...string) []string {
	var out []string
	expected := map[string]bool{}
	for _, w := range expectedWarnings {
		expected[w] = true
	}
	for _, kind := range []struct {
		name string
		m    map[string]int
	}{{"ERROR", ml.Errors}, {"WARN", ml.Warnings}} {
		keys := make([]string, 0, len(kind.m))
		for k := range kind.m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if !expected[k] {
				out = append(out, fmt.Sprintf("%s %q x%d", kind.name, k, kind.m[k]))
			}
		}
	}
	for _, o := range ml.Other {
		out = append(out, "non-log output: "+o)
	}
	if ml.Exit != "" {
		out = append(out, "exit: "+ml.Exit)
	}
	return out
}

func tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
