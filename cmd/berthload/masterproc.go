package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
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
	cmd     *exec.Cmd
	URL     string
	Args    []string
	LogPath string
	exited  chan struct{}
	waitErr error
}

// startMaster runs the master on 127.0.0.1 with a port the kernel picks,
// logging JSON to a file, and waits until it is the ALIVE leader.
func startMaster(ctx context.Context, o masterOpts, name string) (*masterProc, error) {
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
	logPath := filepath.Join(o.Dir, name+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	cmd := exec.Command(o.Bin, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// Its configuration is the flags above: no BERTH_* variable of ours
	// leaks in, and the secret goes through the environment, not argv.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "BERTH_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	if o.Secret != "" {
		cmd.Env = append(cmd.Env, "BERTH_SECRET="+o.Secret)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting the master %s: %w", o.Bin, err)
	}
	m := &masterProc{cmd: cmd, Args: args, LogPath: logPath, exited: make(chan struct{})}
	go func() {
		m.waitErr = cmd.Wait()
		close(m.exited)
	}()
	fail := func(err error) (*masterProc, error) {
		m.stop()
		return nil, fmt.Errorf("%w\nmaster log %s:\n%s", err, logPath, tail(logPath, 20))
	}
	// The address: from the "master serving" line (the port is the kernel's).
	deadline := time.Now().Add(20 * time.Second)
	for m.URL == "" {
		if addr := servingAddress(logPath); addr != "" {
			m.URL = addr
			break
		}
		select {
		case <-m.exited:
			return fail(fmt.Errorf("the master exited at start: %v", m.waitErr))
		case <-ctx.Done():
			return fail(ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fail(errors.New("the master did not say where it serves within 20s"))
		}
	}
	client := &http.Client{Timeout: 2 * time.Second}
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, m.URL+"/readyz", nil)
		if o.Secret != "" {
			req.Header.Set("Authorization", "Bearer "+o.Secret)
		}
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return m, nil
			}
		}
		select {
		case <-m.exited:
			return fail(fmt.Errorf("the master exited at start: %v", m.waitErr))
		case <-ctx.Done():
			return fail(ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fail(errors.New("the master was not ready (GET /readyz) within 20s"))
		}
	}
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

// pid is the master's process id.
func (m *masterProc) pid() int { return m.cmd.Process.Pid }

// stop sends SIGTERM to the master's pid, waits up to 10 s for it to drain,
// then kills it. It returns the exit status ("" for a clean exit).
func (m *masterProc) stop() string {
	select {
	case <-m.exited:
	default:
		_ = m.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-m.exited:
		case <-time.After(10 * time.Second):
			_ = m.cmd.Process.Kill()
			<-m.exited
			return "killed: did not stop within 10s of SIGTERM"
		}
	}
	if m.waitErr != nil {
		return m.waitErr.Error()
	}
	return ""
}

// cpuTicks is the master's user+system CPU time so far, in clock ticks.
func (m *masterProc) cpuTicks() int64 { return procCPUTicks(m.pid()) }

func procCPUTicks(pid int) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return -1
	}
	// The command name (field 2) may hold spaces: count from its ')'.
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return -1
	}
	fields := strings.Fields(s[i+1:])
	if len(fields) < 13 {
		return -1
	}
	utime, err1 := strconv.ParseInt(fields[11], 10, 64)
	stime, err2 := strconv.ParseInt(fields[12], 10, 64)
	if err1 != nil || err2 != nil {
		return -1
	}
	return utime + stime
}

// selfCPU is this process's user+system CPU time.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
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
