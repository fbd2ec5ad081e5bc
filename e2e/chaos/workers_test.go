package chaos

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/berth-cluster/berth/internal/poll"
	"github.com/berth-cluster/berth/testkit/testcluster"
	"github.com/berth-cluster/berth/wire"
)

// A worker out of touch (issue 21): frozen (SIGSTOP), or cut off from the
// masters while its processes run on and its apps' clients still reach
// the masters (nftables, by socket owner: the worker runs as a user of its
// own), for longer than the worker timeout. The masters count it DEAD, its
// executors LOST, and place them again elsewhere; the app never lists more
// executors than it asked for (pidWatch). When the worker is back it
// registers again, and every process it still ran from before (copies of
// executors replaced meanwhile, drivers ended) is killed within a second.

// cutWorkerUID is the user the second worker runs as, where it can be cut
// off (the masters run as 64101-64103).
const cutWorkerUID = 64111

// copiesKilledWithin is how soon after a worker is ALIVE again the copies
// it ran from before its outage must be gone.
const copiesKilledWithin = time.Second

// workerOut is one outage of a worker: from the fault until it was seen
// ALIVE again (back; zero until then).
type workerOut struct {
	kind   string
	worker string
	from   time.Time
	back   time.Time
}

// workerFreeze stops the worker that runs most of the strict app's
// executors (SIGSTOP) until it is DEAD and they run elsewhere, then lets
// it go on (SIGCONT).
func (ch *chaos) workerFreeze() ([]faultResult, error) {
	w, err := ch.busiestWorker()
	if err != nil {
		return nil, err
	}
	return ch.workerOutage("worker freeze", w, func() error { return w.Signal(syscall.SIGSTOP) }, func() error { return w.Signal(syscall.SIGCONT) })
}

// workerCut cuts the worker that runs as a user of its own off from the
// masters until it is DEAD and its strict executors run elsewhere, then
// heals the cut.
func (ch *chaos) workerCut() ([]faultResult, error) {
	var w *testcluster.Worker
	for _, x := range ch.cl.Workers {
		if x.UID != 0 {
			w = x
		}
	}
	if w == nil {
		return nil, errors.New("worker cut: no worker runs as a user of its own")
	}
	return ch.workerOutage("worker cut", w, func() error { return ch.cut.CutWorker(w, ch.cl.Masters) }, ch.cut.Heal)
}

// busiestWorker is the worker with the most executors of the strict
// long-running apps, then of any long-running app, by the leader's view.
func (ch *chaos) busiestWorker() (*testcluster.Worker, error) {
	_, st, err := ch.leader()
	if err != nil {
		return nil, err
	}
	score := map[string]int{}
	for _, la := range ch.long {
		for _, a := range st.ActiveApps {
			if a.Name != la.name {
				continue
			}
			for _, e := range a.Executors {
				if e.State == wire.ExecutorRunning {
					score[e.WorkerID] += 1 + 100*b2i(la.strict)
				}
			}
		}
	}
	best := ch.cl.Workers[0]
	for _, w := range ch.cl.Workers[1:] {
		if score[w.ID] > score[best.ID] {
			best = w
		}
	}
	return best, nil
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// workerOutage takes worker w out (inject) until the masters count it
// DEAD and every strict app runs all its executors elsewhere (the
// failover), brings it back (restore), and checks that the processes it
// ran from before are killed within copiesKilledWithin of its return and
// that everything is back.
func (ch *chaos) workerOutage(kind string, w *testcluster.Worker, inject, restore func() error) ([]faultResult, error) {
	_, st, err := ch.leader()
	if err != nil {
		return nil, err
	}
	copies := markedUnder(w.Pid(), ch.marker)
	out := &workerOut{kind: kind, worker: w.ID, from: time.Now()}
	ch.watch.addOut(out)
	ch.outs = append(ch.outs, out)
	t0 := out.from
	if err := inject(); err != nil {
		return nil, err
	}
	replaced, _, err := ch.until(kind+": its executors LOST and replaced", t0, t0.Add(workerTimeout+backWithin), nil, ch.replacedWithout(w.ID))
	if rerr := restore(); rerr != nil {
		return nil, errors.Join(err, rerr)
	}
	if err != nil {
		return nil, err
	}
	t1 := time.Now()
	alive, _, err := ch.until(kind+": the worker ALIVE again", t1, t1.Add(backWithin), nil, func(st wire.ClusterStatus) string {
		for _, x := range st.Workers {
			if x.ID == w.ID && x.State == wire.WorkerAlive {
				return ""
			}
		}
		return "worker " + w.ID + " not ALIVE"
	})
	if err != nil {
		return nil, err
	}
	ch.watch.outBack(out, alive)
	killed, left := waitGone(copies, alive.Add(10*time.Second))
	if len(left) > 0 {
		return nil, fmt.Errorf("%s: %d processes %s ran from before its outage still run 10s after it was ALIVE again: %s", kind, len(left), w.ID, describePids(left))
	}
	ch.t.Logf("%s: %s out from %s; DEAD and replaced after %s; the %d processes it ran from before (executors, drivers) gone %s after its return",
		kind, w.ID, t0.Format("15:04:05.000"), replaced.Sub(t0).Round(time.Millisecond), len(copies), killed.Sub(t1).Round(time.Millisecond))
	res, err := ch.back(kind, t1, st.Epoch)
	if err != nil {
		return nil, err
	}
	killedAfter := max(killed.Sub(alive), 0)
	res.more = []measure{
		took("ALIVE again after its return", alive.Sub(t1)),
		took("its copies gone after its return", killed.Sub(t1)),
		took("its copies gone after it was seen ALIVE again (0: before)", killedAfter),
		took("everything back after its return", res.failover),
	}
	res.failover = replaced.Sub(t0)
	if killedAfter > copiesKilledWithin {
		return []faultResult{res}, fmt.Errorf("%s: the %d processes %s ran from before its outage were killed %s after it was ALIVE again, more than %s", kind, len(copies), w.ID, killedAfter.Round(time.Millisecond), copiesKilledWithin)
	}
	return []faultResult{res}, nil
}

// replacedWithout is the condition that worker w is DEAD and every strict
// long-running app RUNNING all its executors on other workers.
func (ch *chaos) replacedWithout(w string) func(wire.ClusterStatus) string {
	return func(st wire.ClusterStatus) string {
		for _, x := range st.Workers {
			if x.ID == w && x.State != wire.WorkerDead {
				return fmt.Sprintf("worker %s is %s", w, x.State)
			}
		}
		for _, la := range ch.long {
			if !la.strict {
				continue
			}
			running := 0
			for _, a := range st.ActiveApps {
				if a.Name == la.name {
					for _, e := range a.Executors {
						if e.State == wire.ExecutorRunning && e.WorkerID != w {
							running++
						}
					}
				}
			}
			if running != la.executors {
				return fmt.Sprintf("%s has %d of its %d executors RUNNING on other workers", la.name, running, la.executors)
			}
		}
		return ""
	}
}

// markedUnder lists the processes under pid now whose command line holds
// marker: a worker's executors and drivers of this run (not its guardian).
func markedUnder(pid int, marker string) []int {
	children := map[int][]testcluster.Process{}
	for _, p := range testcluster.Processes() {
		children[p.PPid] = append(children[p.PPid], p)
	}
	var out []int
	next := children[pid]
	for len(next) > 0 {
		p := next[0]
		next = append(next[1:], children[p.Pid]...)
		if strings.Contains(p.Cmdline, marker) {
			out = append(out, p.Pid)
		}
	}
	slices.Sort(out)
	return out
}

// running reports whether pid is a process that has not exited (a zombie
// not yet reaped has).
func running(pid int) bool {
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(stat), ')')
	return i >= 0 && !strings.HasPrefix(strings.TrimSpace(string(stat[i+1:])), "Z")
}

// waitGone polls until none of pids runs, or deadline; it returns when
// they were seen gone, and those still running at the deadline.
func waitGone(pids []int, deadline time.Time) (time.Time, []int) {
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	var left []int
	poll.Until(ctx, 20*time.Millisecond, func() bool {
		left = slices.DeleteFunc(slices.Clone(pids), func(p int) bool { return !running(p) })
		return len(left) == 0
	})
	return time.Now(), left
}

// describePids names each pid with its command line.
func describePids(pids []int) string {
	var parts []string
	for _, p := range pids {
		cmd, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(p), "cmdline"))
		parts = append(parts, fmt.Sprintf("%d (%s)", p, strings.TrimSpace(strings.ReplaceAll(string(cmd), "\x00", " "))))
	}
	return strings.Join(parts, ", ")
}
