package failover

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/berth-cluster/berth/bench/internal/benchstat"
	"github.com/berth-cluster/berth/testkit/testcluster"
)

// procs is every daemon the tool started. They are only ever signalled by
// pid; killAll kills what still runs of them at the end, also after an
// error or a Ctrl-C, and they die with the tool if it is killed.
type procs struct {
	host testcluster.CommandHost
	mu   sync.Mutex
	list []*testcluster.Proc
}

// start runs path with args, its stdout and stderr appended to logPath
// after a line saying when it started (lineTime reads it). The daemon gets
// nothing of our environment but the basics, and has its own process
// group, so that a Ctrl-C in the terminal reaches only this tool, which
// then stops the cluster itself.
func (ps *procs) start(name, path string, args []string, logPath string) (*testcluster.Proc, error) {
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(f, "%s%s started %s: %s %s\n", startLinePrefix, name, time.Now().Format(time.RFC3339Nano), path, strings.Join(args, " "))
	if err := f.Close(); err != nil {
		return nil, err
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	p, err := testcluster.Start(&ps.host, name, path, logPath, args, testcluster.ProcOptions{
		CleanEnv: true,
		Env:      []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "TMPDIR=" + os.TempDir()},
	})
	if err != nil {
		return nil, err
	}
	ps.list = append(ps.list, p)
	return p, nil
}

// running returns the processes not yet reaped.
func (ps *procs) running() []*testcluster.Proc {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	var out []*testcluster.Proc
	for _, p := range ps.list {
		if !p.Exited() {
			out = append(out, p)
		}
	}
	return out
}

// killAll kills every process still running, by pid, and waits for them.
func (ps *procs) killAll() { ps.host.Close() }

// exitedWithin waits up to d for p to exit and reports whether it did.
func exitedWithin(p *testcluster.Proc, d time.Duration) bool {
	select {
	case <-p.Done():
		return true
	case <-time.After(d):
		return false
	}
}

// stopped stops p (SIGTERM, SIGKILL after grace) and reports whether it
// exited within grace; one that had exited already did.
func stopped(p *testcluster.Proc, grace time.Duration) bool {
	err := p.Stop(grace)
	return err == nil || errors.Is(err, testcluster.ErrExited)
}

// procStart is a process's start time: with the pid it names one process
// for good. False once it has ended.
func procStart(pid int) (uint64, bool) {
	st, ok := benchstat.ReadProcStat(pid)
	if !ok || st.State == "Z" {
		return 0, false
	}
	return st.StartTicks, true
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
		st, ok := benchstat.ReadProcStat(pid)
		if !ok || st.State == "Z" || !parents[st.PPID] {
			continue
		}
		// A worker's guardian leads a session of its own; its executors
		// lead only their process groups.
		if st.Session == pid {
			continue
		}
		out[pid] = st.StartTicks
	}
	return out
}
