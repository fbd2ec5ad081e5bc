package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// proc is one process this tool started. It is only ever signalled by pid.
type proc struct {
	name    string
	path    string
	args    []string
	logPath string
	cmd     *exec.Cmd
	started time.Time
	done    chan struct{} // closed once the process has been reaped
	exitAt  time.Time     // set before done is closed
	err     error         // its exit, set before done is closed
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// signal sends sig by pid unless the process was already reaped (so the pid
// cannot belong to someone else).
func (p *proc) signal(sig syscall.Signal) error {
	if p.exited() {
		return nil
	}
	if err := syscall.Kill(p.pid(), sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("signal %v to %s (pid %d): %w", sig, p.name, p.pid(), err)
	}
	return nil
}

// wait waits up to timeout for the process to exit.
func (p *proc) wait(timeout time.Duration) bool {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-p.done:
		return true
	case <-t.C:
		return false
	}
}

// kill sends SIGKILL (after SIGCONT, in case it was stopped) and waits.
func (p *proc) kill() {
	_ = p.signal(syscall.SIGCONT)
	_ = p.signal(syscall.SIGKILL)
	p.wait(10 * time.Second)
}

// stop sends SIGTERM, and SIGKILL if the process is still there after grace.
// It reports whether the process exited within grace.
func (p *proc) stop(grace time.Duration) bool {
	_ = p.signal(syscall.SIGTERM)
	if p.wait(grace) {
		return true
	}
	p.kill()
	return false
}

// One goroutine, locked to its OS thread for good, starts every child, so
// that Pdeathsig (sent when the forking *thread* dies, golang/go#27505) only
// fires when this process dies: then the cluster dies with it, even if the
// tool itself is SIGKILLed.
var (
	spawnOnce sync.Once
	spawnReqs chan spawnReq
)

type spawnReq struct {
	cmd  *exec.Cmd
	done chan error
}

func spawner(reqs <-chan spawnReq) {
	runtime.LockOSThread() // never unlocked
	for r := range reqs {
		r.done <- r.cmd.Start()
	}
}

func startCmd(cmd *exec.Cmd) error {
	spawnOnce.Do(func() {
		spawnReqs = make(chan spawnReq)
		go spawner(spawnReqs)
	})
	r := spawnReq{cmd: cmd, done: make(chan error, 1)}
	spawnReqs <- r
	return <-r.done
}

// procs is every process the tool started, for the cleanup.
type procs struct {
	mu   sync.Mutex
	list []*proc
}

// start runs path with args, its stdout and stderr appended to logPath.
// The child has its own process group, so a Ctrl-C in the terminal reaches
// only this tool, which then stops the cluster itself.
func (ps *procs) start(name, path string, args []string, logPath string) (*proc, error) {
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fmt.Fprintf(f, "# failoverbench: %s started %s: %s %s\n", name, time.Now().Format(time.RFC3339Nano), path, strings.Join(args, " "))
	cmd := exec.Command(path, args...)
	cmd.Stdout, cmd.Stderr = f, f
	// Nothing of ours leaks into the daemons but the basics.
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "TMPDIR=" + os.TempDir()}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	p := &proc{name: name, path: path, args: args, logPath: logPath, cmd: cmd, done: make(chan struct{})}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if err := startCmd(cmd); err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p.started = time.Now()
	ps.list = append(ps.list, p)
	go func() {
		err := cmd.Wait()
		p.exitAt, p.err = time.Now(), err
		close(p.done)
	}()
	return p, nil
}

// running returns the processes not yet reaped.
func (ps *procs) running() []*proc {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	var out []*proc
	for _, p := range ps.list {
		if !p.exited() {
			out = append(out, p)
		}
	}
	return out
}

// killAll kills every process still running, by pid, and waits for them.
func (ps *procs) killAll() {
	for _, p := range ps.running() {
		p.kill()
	}
}

// freePort returns a TCP port free on ip at the moment.
func freePort(ip string) (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// waitHealthy polls url/healthz until 200, the process exits, or timeout.
func waitHealthy(ctx context.Context, p *proc, url string, timeout time.Duration) error {
	hc := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(timeout)
	for {
		if p.exited() {
			return fmt.Errorf("%s exited before it was healthy (%v); see %s", p.name, p.err, p.logPath)
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+"/healthz", nil)
		if resp, err := hc.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not healthy within %s; see %s", p.name, timeout, p.logPath)
		}
		if err := sleepCtx(ctx, 20*time.Millisecond); err != nil {
			return err
		}
	}
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// procStart is a process's start time in clock ticks since boot (field 22
// of /proc/<pid>/stat): with the pid it names one process for good.
func procStart(pid int) (uint64, bool) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	fields, ok := statFields(string(data))
	if !ok || len(fields) < 20 || fields[0] == "Z" {
		return 0, false
	}
	v, err := strconv.ParseUint(fields[19], 10, 64)
	return v, err == nil
}

// statFields returns the fields of a /proc/<pid>/stat line after the
// command name (which may hold spaces and parentheses): state is [0], ppid
// [1], starttime [19].
func statFields(line string) ([]string, bool) {
	i := strings.LastIndexByte(line, ')')
	if i < 0 {
		return nil, false
	}
	return strings.Fields(line[i+1:]), true
}

// childrenOf lists the live (not zombie) processes whose parent is one of
// parents, with their start times.
func childrenOf(parents map[int]bool) map[int]uint64 {
	out := map[int]uint64{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		fields, ok := statFields(string(data))
		if !ok || len(fields) < 20 || fields[0] == "Z" {
			continue
		}
		ppid, _ := strconv.Atoi(fields[1])
		if !parents[ppid] {
			continue
		}
		// A worker's guardian leads a session of its own; its executors
		// lead only their process groups.
		if sid, _ := strconv.Atoi(fields[3]); sid == pid {
			continue
		}
		if st, err := strconv.ParseUint(fields[19], 10, 64); err == nil {
			out[pid] = st
		}
	}
	return out
}
