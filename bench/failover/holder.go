package failover

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/berth-cluster/berth/client"
	"github.com/berth-cluster/berth/internal/poll"
	"github.com/berth-cluster/berth/wire"
)

// holder is the long-running app: its client follows the event stream (the
// app's lease) through every failover, as a real driver would.
type holder struct {
	id     string
	cancel context.CancelFunc
	done   chan error

	mu        sync.Mutex
	round     string // the round under way, to attribute incidents
	counts    map[wire.EventType]int
	incidents []string // executors lost or ended, the stream giving up
}

func (h *holder) setRound(r string) {
	h.mu.Lock()
	h.round = r
	h.mu.Unlock()
}

func (h *holder) handle(ev wire.AppEvent) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.counts[ev.Type]++
	switch ev.Type {
	case wire.EventExecutorLost:
		h.incidents = append(h.incidents, fmt.Sprintf("%s: executorLost %v: %s", h.round, execID(ev.Executor), ev.Message))
	case wire.EventExecutorUpdated:
		if ev.Executor != nil && ev.Executor.State.Finished() {
			h.incidents = append(h.incidents, fmt.Sprintf("%s: executor %d %s: %s", h.round, ev.Executor.ID, ev.Executor.State, ev.Executor.Message))
		}
	case wire.EventAppRemoved:
		h.incidents = append(h.incidents, fmt.Sprintf("%s: app removed: %s", h.round, ev.Message))
	}
	return nil
}

func execID(e *wire.ExecutorStatus) any {
	if e == nil {
		return "?"
	}
	return e.ID
}

func (h *holder) snapshot() (map[wire.EventType]int, []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	counts := map[wire.EventType]int{}
	for k, v := range h.counts {
		counts[k] = v
	}
	return counts, slices.Clone(h.incidents)
}

// startApp registers the long-running app, follows its events, and waits
// until its executors run; then it records their processes.
func (cl *cluster) startApp(ctx context.Context) error {
	// The client's retries and reconnections (debug) go to a log of their
	// own, merged with the daemons' around slow rounds.
	logf, err := os.OpenFile(filepath.Join(cl.root, "logs", cl.name+"-appclient.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	c, err := client.New(cl.urls(), cl.cfg.secret, cl.pki.ClientOption(), client.WithLogger(slog.New(slog.NewTextHandler(logf, &slog.HandlerOptions{Level: slog.LevelDebug}))))
	if err != nil {
		logf.Close()
		return err
	}
	n := cl.cfg.executors
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	id, err := c.RegisterApp(rctx, wire.AppDescription{
		Name: "berthbench-holder", Command: []string{"sleep", "3600"},
		MaxCores: n, CoresPerExecutor: 1, MemoryPerExecutorMB: 64,
	})
	cancel()
	if err != nil {
		logf.Close()
		return err
	}
	sctx, stop := context.WithCancel(context.Background())
	h := &holder{id: id, cancel: stop, done: make(chan error, 1), counts: map[wire.EventType]int{}, round: "setup"}
	go func() {
		err := c.Events(sctx, id, h.handle)
		if err != nil && sctx.Err() == nil {
			h.mu.Lock()
			h.incidents = append(h.incidents, fmt.Sprintf("%s: event stream gave up: %v", h.round, err))
			h.mu.Unlock()
		}
		h.done <- err
		logf.Close()
	}()
	cl.app = h
	_, st, err := cl.steady(ctx, 60*time.Second, true)
	if err != nil {
		return err
	}
	a, _ := findApp(st, id)
	cl.execIDs = runningExecutors(a)
	parents := map[int]bool{}
	for _, w := range cl.workers {
		parents[w.proc.Pid()] = true
	}
	if poll.Within(ctx, 20*time.Second, 100*time.Millisecond, func() bool {
		cl.execs = childrenOf(parents)
		return len(cl.execs) == n
	}) {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return fmt.Errorf("the workers run %d processes, want %d executors", len(cl.execs), n)
}

// executorsIntact reports what happened to the app's executors since the
// last check: processes gone or replaced, or a different set RUNNING in the
// leader's view. Empty when nothing did. What it reports becomes the new
// baseline, so each loss is reported once.
func (cl *cluster) executorsIntact(st wire.ClusterStatus) []string {
	if cl.app == nil {
		return nil
	}
	var problems []string
	for pid, start := range cl.execs {
		if s, ok := procStart(pid); !ok || s != start {
			problems = append(problems, fmt.Sprintf("executor process %d is gone", pid))
			delete(cl.execs, pid)
		}
	}
	a, ok := findApp(st, cl.app.id)
	if !ok {
		return append(problems, "the app is not active")
	}
	if ids := runningExecutors(a); !slices.Equal(ids, cl.execIDs) {
		problems = append(problems, fmt.Sprintf("RUNNING executors %v, were %v", ids, cl.execIDs))
		cl.execIDs = ids
	}
	return problems
}
