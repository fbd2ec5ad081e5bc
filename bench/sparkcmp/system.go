package sparkcmp

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/berth-cluster/berth/internal/poll"
)

// system is one of the two cluster managers, as the measures drive it:
// the same Spark jobs go to both through spark-submit, only the master
// URL and the system's own arguments differ.
type system interface {
	name() string      // "berth" or "Spark"
	masterURL() string // spark-submit's --master
	submitArgs() []string
	// workerHosts are the workers' addresses, as executors report their
	// host: worker i is at workerHosts()[i].
	workerHosts() []string
	// loseWorker SIGKILLs (or, frozen, SIGSTOPs) worker i and every
	// process below it, and says when.
	loseWorker(i int, frozen bool) (time.Time, error)
	// restartWorker starts worker i again once the active master has
	// declared it dead (ending first what of it is frozen), and waits
	// until every worker is ALIVE.
	restartWorker(ctx context.Context, i int) error
	// status is one look at the cluster: errors when no master leads.
	status(ctx context.Context) (clusterView, error)
	// restartMaster starts d again (it must have exited) and waits until
	// it answers and a master leads every worker.
	restartMaster(ctx context.Context, d *daemon) error
	masters() []*daemon
	// controlPlane is the masters and what they need (ZooKeeper): what a
	// burst's CPU time is summed over.
	controlPlane() []*daemon
	// daemons are every process of the system's cluster: masters,
	// workers and what the masters need (ZooKeeper).
	daemons() []*daemon
}

// clusterView is what a system's masters say at one moment.
type clusterView struct {
	active      *daemon // the master leading and ALIVE
	mastersUp   int     // masters answering (the active one included)
	aliveHosts  map[string]bool
	coresInUse  int // on ALIVE workers
	description string
}

// ready is idle, after starting again, and saying so in section, any
// daemon of s that exited on its own (a Spark Master that lost its
// ZooKeeper session shuts itself down): every trial starts from the whole
// cluster, and the report tells what it lost between two.
func (h *harness) ready(ctx context.Context, s system, section string, within time.Duration) (clusterView, error) {
	for _, d := range s.daemons() {
		if d.proc == nil || d.running() {
			continue
		}
		how := "exited on its own"
		if d.signalled {
			how = "was left stopped by a trial that failed"
		}
		h.rep.note(section, "%s's %s %s at %s (%v); its log ends: %s; started again", s.name(), d.name, how,
			d.proc.ExitedAt().Format("15:04:05.000"), d.proc.Err(), lastLogLines(d.proc.Log, 3))
		h.progress("%s's %s %s; starting it again", s.name(), d.name, how)
		if err := h.ps.start(d); err != nil {
			return clusterView{}, err
		}
	}
	return idle(ctx, s, h.cfg.workers, within)
}

// lastLogLines are the last n lines of a log that say ERROR or FATAL, or
// else its last n lines, joined by " / ".
func lastLogLines(path string, n int) string {
	data, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	var errs []string
	for _, l := range lines {
		if strings.Contains(l, "ERROR") || strings.Contains(l, "FATAL") || strings.Contains(l, "level=ERROR") {
			errs = append(errs, strings.TrimSpace(l))
		}
	}
	if len(errs) == 0 {
		errs = lines
	}
	return strings.Join(errs[max(len(errs)-n, 0):], " / ")
}

// idle waits until a master leads with every worker ALIVE, every master
// answers and no core is in use: the state every trial starts from, so
// that no executor of the last trial still starts or exits.
func idle(ctx context.Context, s system, workers int, within time.Duration) (clusterView, error) {
	var v clusterView
	var err error
	ok := poll.Within(ctx, within, 100*time.Millisecond, func() bool {
		v, err = s.status(ctx)
		return err == nil && v.mastersUp == len(s.masters()) && len(v.aliveHosts) == workers && v.coresInUse == 0
	})
	if !ok {
		if err == nil {
			err = fmt.Errorf("%s", v.description)
		}
		return v, fmt.Errorf("%s not idle within %s (every master up, every worker ALIVE, no core in use): %w", s.name(), within, err)
	}
	return v, nil
}

// waitNewActive polls until a master other than old leads (ALIVE), and
// returns when that was first seen; false past the deadline.
func waitNewActive(ctx context.Context, s system, old *daemon, within time.Duration) (time.Time, bool) {
	var at time.Time
	ok := poll.Within(ctx, within, 50*time.Millisecond, func() bool {
		v, err := s.status(ctx)
		if err == nil && v.active != nil && v.active != old {
			at = time.Now()
			return true
		}
		return false
	})
	return at, ok
}

// waitWorkerDown polls until the leading master no longer lists host as
// ALIVE, so that a worker restarted there registers anew.
func waitWorkerDown(ctx context.Context, s system, host string, within time.Duration) error {
	if last, ok := waitView(ctx, s, within, func(v clusterView) bool { return !v.aliveHosts[host] }); !ok {
		return fmt.Errorf("%s: the worker at %s still ALIVE after %s (%s)", s.name(), host, within, last)
	}
	return nil
}

// waitWorkers polls until a master leads n ALIVE workers.
func waitWorkers(ctx context.Context, s system, n int, within time.Duration) error {
	if last, ok := waitView(ctx, s, within, func(v clusterView) bool { return len(v.aliveHosts) == n }); !ok {
		return fmt.Errorf("%s: %d workers not ALIVE within %s (%s)", s.name(), n, within, last)
	}
	return nil
}

// waitView polls s's status every 100 ms until done holds, within; when
// it does not, last is what the status said last (or its error).
func waitView(ctx context.Context, s system, within time.Duration, done func(clusterView) bool) (last string, ok bool) {
	ok = poll.Within(ctx, within, 100*time.Millisecond, func() bool {
		v, err := s.status(ctx)
		if err != nil {
			last = err.Error()
			return false
		}
		last = v.description
		return done(v)
	})
	return last, ok
}

// loseWorker is what both systems do to lose worker d.
func loseWorker(ps *procs, d *daemon, frozen bool) (time.Time, error) {
	if frozen {
		return ps.freezeTree(d)
	}
	return ps.killTree(d)
}

// restartWorker waits until s has declared the worker at host dead, ends
// what is left of it (frozen), calls gone with the pid it had, and starts
// it again.
func restartWorker(ctx context.Context, s system, ps *procs, d *daemon, host string, workers int, timeout time.Duration, gone func(pid int)) error {
	if err := waitWorkerDown(ctx, s, host, 2*timeout+time.Minute); err != nil {
		return err
	}
	if d.running() {
		if _, err := ps.killTree(d); err != nil {
			return err
		}
	}
	if gone != nil {
		gone(d.pid())
	}
	if err := ps.start(d); err != nil {
		return err
	}
	return waitWorkers(ctx, s, workers, 2*time.Minute)
}
