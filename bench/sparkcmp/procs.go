package sparkcmp

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/berth-cluster/berth/bench/internal/benchstat"
	"github.com/berth-cluster/berth/internal/poll"
	"github.com/berth-cluster/berth/testkit/testcluster"
)

// daemon is one long-lived process of either cluster: its command stays
// the same across restarts, each run logging to a file of its own.
type daemon struct {
	name   string // zk, s1, sw1, m1, bw1 ...
	path   string
	args   []string
	env    []string // its whole environment (it inherits nothing)
	logDir string
	starts int
	proc   *testcluster.Proc
	// signalled: the measure stopped this run of it (a kill, a freeze, a
	// failover's signal); else its end is its own.
	signalled bool
}

// commandLine is how the report shows the daemon: its environment's
// settings that matter, then its argv.
func (d *daemon) commandLine() string {
	var env []string
	for _, e := range d.env {
		if k, _, _ := strings.Cut(e, "="); k != "PATH" && k != "HOME" && k != "TMPDIR" {
			env = append(env, e)
		}
	}
	return strings.TrimSpace(strings.Join(env, " ") + " " + d.path + " " + strings.Join(d.args, " "))
}

func (d *daemon) running() bool { return d.proc != nil && !d.proc.Exited() }

func (d *daemon) pid() int {
	if d.proc == nil {
		return 0
	}
	return d.proc.Pid()
}

// procs is every process the run started. They are ended by pid only:
// the daemons through their testcluster.Proc (which also has them die
// with this process), what they started through the pids and start times
// recorded when they were seen.
type procs struct {
	host testcluster.CommandHost
	mu   sync.Mutex
	seen map[int]uint64 // descendants of our daemons: pid → start time
}

// start runs d (again) with its own command and environment.
func (ps *procs) start(d *daemon) error {
	d.starts++
	d.signalled = false
	log := filepath.Join(d.logDir, fmt.Sprintf("%s.%d.log", d.name, d.starts))
	p, err := testcluster.Start(&ps.host, d.name, d.path, log, d.args, testcluster.ProcOptions{CleanEnv: true, Env: d.env})
	if err != nil {
		return fmt.Errorf("starting %s: %w", d.name, err)
	}
	d.proc = p
	return nil
}

// remember records what runs below pid now, so that the end of the run
// can kill what a daemon left behind (a Spark Worker's executors do not
// die with it).
func (ps *procs) remember(tree []procID) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.seen == nil {
		ps.seen = map[int]uint64{}
	}
	for _, p := range tree {
		ps.seen[p.pid] = p.start
	}
}

// stop ends d: SIGTERM, SIGKILL after grace, then SIGKILL to whatever it
// had started that still runs.
func (ps *procs) stop(d *daemon, grace time.Duration) error {
	if !d.running() {
		return nil
	}
	tree := descendants(d.pid())
	ps.remember(tree)
	err := d.proc.Stop(grace)
	if errors.Is(err, testcluster.ErrExited) {
		err = nil
	}
	// What it started may still be ending on its own (a berth worker's
	// guardian removing its cgroups): a few seconds, then SIGKILL.
	allGone(tree, 5*time.Second)
	killProcs(tree)
	return err
}

// killAll kills every process still running: the daemons, then anything
// they were seen to have started.
func (ps *procs) killAll() {
	ps.host.Close()
	ps.mu.Lock()
	var left []procID
	for pid, start := range ps.seen {
		left = append(left, procID{pid, start})
	}
	ps.mu.Unlock()
	killProcs(left)
}

// procID names one process for good: a pid and its start time.
type procID struct {
	pid   int
	start uint64
}

// alive reports whether the process still runs (not a zombie, and its pid
// not reused).
func (p procID) alive() bool {
	st, ok := benchstat.ReadProcStat(p.pid)
	return ok && st.State != "Z" && st.StartTicks == p.start
}

// descendants lists the processes below root (children, their children
// ...), read from /proc at once.
func descendants(root int) []procID {
	children := map[int][]procID{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, ok := benchstat.ReadProcStat(pid); ok && st.State != "Z" {
			children[st.PPID] = append(children[st.PPID], procID{pid, st.StartTicks})
		}
	}
	var out []procID
	queue := []int{root}
	for len(queue) > 0 && len(out) < 10_000 {
		for _, c := range children[queue[0]] {
			out = append(out, c)
			queue = append(queue, c.pid)
		}
		queue = queue[1:]
	}
	return out
}

// killProcs SIGKILLs each process of list that still is the one recorded.
func killProcs(list []procID) {
	for _, p := range list {
		if p.alive() {
			_ = syscall.Kill(p.pid, syscall.SIGKILL)
		}
	}
}

// killTree SIGKILLs a daemon and everything below it, as the loss of its
// machine would, and returns when the signals were sent. The daemon's own
// exit is awaited (bounded); the others are reaped by init.
func (ps *procs) killTree(d *daemon) (time.Time, error) {
	if !d.running() {
		return time.Time{}, fmt.Errorf("%s is not running", d.name)
	}
	tree := descendants(d.pid())
	ps.remember(tree)
	d.signalled = true
	if err := d.proc.Signal(syscall.SIGKILL); err != nil {
		return time.Time{}, fmt.Errorf("killing %s: %w", d.name, err)
	}
	at := time.Now()
	killProcs(tree)
	select {
	case <-d.proc.Done():
	case <-time.After(10 * time.Second):
		return at, fmt.Errorf("%s (pid %d) did not exit within 10s of SIGKILL", d.name, d.pid())
	}
	if !allGone(tree, 10*time.Second) {
		return at, fmt.Errorf("processes below %s still there 10s after SIGKILL", d.name)
	}
	return at, nil
}

// allGone waits, at most within, until none of the processes runs.
func allGone(list []procID, within time.Duration) bool {
	return poll.Within(context.Background(), within, 20*time.Millisecond, func() bool {
		for _, p := range list {
			if p.alive() {
				return false
			}
		}
		return true
	})
}

// freezeTree SIGSTOPs a daemon and everything below it: its sockets stay
// open and silent, as a machine that died or hung leaves them (a SIGKILL
// has the kernel close them, which peers see at once). killTree ends them
// later.
func (ps *procs) freezeTree(d *daemon) (time.Time, error) {
	if !d.running() {
		return time.Time{}, fmt.Errorf("%s is not running", d.name)
	}
	tree := descendants(d.pid())
	ps.remember(tree)
	d.signalled = true
	if err := d.proc.Signal(syscall.SIGSTOP); err != nil {
		return time.Time{}, fmt.Errorf("stopping %s: %w", d.name, err)
	}
	at := time.Now()
	for _, p := range tree {
		if p.alive() {
			_ = syscall.Kill(p.pid, syscall.SIGSTOP)
		}
	}
	return at, nil
}

// usage is what /proc says of a process's resources.
type usage struct {
	cpu     time.Duration // user + system time so far
	rssMB   float64       // resident now (VmRSS)
	peakMB  float64       // resident at most since start or the last resetPeak (VmHWM)
	present bool
}

func readUsage(pid int) usage {
	st, ok := benchstat.ReadProcStat(pid)
	if !ok {
		return usage{}
	}
	u := usage{cpu: time.Duration(st.CPUTicks) * time.Second / benchstat.ClockTicks, present: true}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return u
	}
	for _, line := range strings.Split(string(data), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		var kb float64
		if _, err := fmt.Sscanf(strings.TrimSpace(v), "%f kB", &kb); err != nil {
			continue
		}
		switch k {
		case "VmRSS":
			u.rssMB = kb / 1024
		case "VmHWM":
			u.peakMB = kb / 1024
		}
	}
	return u
}

// resetPeak has the kernel start the process's VmHWM again from its
// present RSS (proc(5), clear_refs "5"), so that a measure's peak is its
// own and not the daemon's since it started.
func resetPeak(pid int) error {
	return os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0)
}

// askAll asks each running daemon of ds at once (ask gets its index) and
// returns the answers and errors by index; one not running is an error.
func askAll[T any](ctx context.Context, ds []*daemon, ask func(context.Context, int) (T, error)) ([]T, []error) {
	states, errs := make([]T, len(ds)), make([]error, len(ds))
	var wg sync.WaitGroup
	for i, d := range ds {
		if !d.running() {
			errs[i] = fmt.Errorf("not running")
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			states[i], errs[i] = ask(ctx, i)
		}()
	}
	wg.Wait()
	return states, errs
}
