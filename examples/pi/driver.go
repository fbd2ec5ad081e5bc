package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/berth-cluster/berth/client"
	"github.com/berth-cluster/berth/wire"
)

// driverConfig is what the driver needs; main fills it from flags.
type driverConfig struct {
	masters          []string
	secret           string
	name             string
	tasks            int
	samples          int64
	seed             uint64
	maxCores         int
	coresPerExecutor int
	executorMemoryMB int
	taskTimeout      time.Duration
	host             string // where the task server listens, reachable by executors
	executable       string // the executors' argv[0]: this very binary
	clientOpts       []client.Option
}

// runDriver runs the whole job: task server, app registration, following
// the app's executors, the result on stdout, unregistration.
func runDriver(ctx context.Context, cfg driverConfig, stdout io.Writer, log *slog.Logger) error {
	q := NewQueue(makeTasks(cfg.tasks, cfg.samples, cfg.seed))
	token, err := newToken()
	if err != nil {
		return err
	}
	// Executors are told the job is over only once the app is unregistered
	// (or the driver gives up): see taskHandler.
	released := make(chan struct{})
	url, stopServer, err := startTaskServer(cfg.host, taskHandler(q, token, released, log))
	if err != nil {
		return err
	}
	defer stopServer()
	defer close(released) // runs first: the server answers 410 before it stops

	cl, err := client.New(cfg.masters, cfg.secret, append([]client.Option{client.WithLogger(log)}, cfg.clientOpts...)...)
	if err != nil {
		return err
	}
	appID, err := cl.RegisterApp(ctx, wire.AppDescription{
		Name:                cfg.name,
		Command:             []string{cfg.executable, "executor", "--driver", url},
		Env:                 map[string]string{tokenEnv: token},
		MaxCores:            cfg.maxCores,
		CoresPerExecutor:    cfg.coresPerExecutor,
		MemoryPerExecutorMB: cfg.executorMemoryMB,
	})
	if err != nil {
		return err
	}
	log.Info("app registered", "app", appID, "tasks", cfg.tasks, "taskServer", url)

	// The event stream is the app's lease with the master, and how lost
	// executors are learnt of.
	w := &watcher{q: q, log: log}
	evCtx, stopEvents := context.WithCancel(context.WithoutCancel(ctx))
	defer stopEvents()
	evDone := make(chan error, 1)
	go func() { evDone <- cl.Events(evCtx, appID, w.handle) }()

	if err := waitForTasks(ctx, q, cfg.taskTimeout, evDone, w, log); err != nil {
		if w.removed.Load() == nil {
			unregister(cl, appID, log)
		}
		return err
	}
	inside, samples, tasks := q.Result()
	fmt.Fprintf(stdout, "Pi is roughly %.6f (%d samples in %d tasks)\n", estimate(inside, samples), samples, tasks)
	unregister(cl, appID, log)
	return nil
}

// waitForTasks waits until every task has a result, re-queueing expired
// leases on the way. It fails if the app is removed, the event stream is
// lost for good, or ctx ends.
func waitForTasks(ctx context.Context, q *Queue, taskTimeout time.Duration, evDone <-chan error, w *watcher, log *slog.Logger) error {
	tick := time.NewTicker(max(taskTimeout/4, 10*time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-q.Done():
			return nil
		case <-tick.C:
			if n := q.RequeueExpired(time.Now(), taskTimeout); n > 0 {
				log.Warn("leases expired; tasks re-queued", "tasks", n, "timeout", taskTimeout)
			}
		case err := <-evDone:
			if app := w.removed.Load(); app != nil {
				return fmt.Errorf("the master removed app %s (%s): %s", app.ID, app.State, app.Message)
			}
			return fmt.Errorf("lost the app's event stream: %w", err)
		case <-ctx.Done():
			return fmt.Errorf("interrupted: %w", ctx.Err())
		}
	}
}

// unregister ends the app (FINISHED). A failure is only logged: the master
// ends the app anyway once its event stream, the lease, is gone.
func unregister(cl *client.Client, appID string, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.UnregisterApp(ctx, appID); err != nil {
		log.Warn("could not unregister the app", "app", appID, "err", err)
		return
	}
	log.Info("app unregistered", "app", appID)
}

// watcher turns the app's events into re-queues.
type watcher struct {
	q       *Queue
	log     *slog.Logger
	removed atomic.Pointer[wire.AppStatus]
}

func (w *watcher) handle(ev wire.AppEvent) error {
	switch ev.Type {
	case wire.EventSnapshot:
		if ev.App == nil {
			return nil
		}
		alive := map[int]bool{}
		for _, e := range ev.App.Executors {
			if e.State.Finished() {
				w.lost(e.ID, string(e.State))
			} else {
				alive[e.ID] = true
			}
		}
		if n := w.q.RequeueExcept(alive); n > 0 {
			w.log.Warn("executors missing from the master's snapshot; their tasks re-queued", "tasks", n)
		}
	case wire.EventExecutorAdded, wire.EventExecutorUpdated, wire.EventExecutorLost:
		if e := ev.Executor; e != nil && (e.State.Finished() || ev.Type == wire.EventExecutorLost) {
			w.lost(e.ID, string(e.State))
		}
	case wire.EventAppRemoved:
		app := ev.App
		if app == nil {
			app = &wire.AppStatus{ID: ev.AppID, State: wire.AppUnknown}
		}
		if app.Message == "" {
			app.Message = ev.Message
		}
		w.removed.Store(app)
	}
	return nil
}

func (w *watcher) lost(id int, state string) {
	if n := w.q.ExecutorLost(id); n > 0 {
		w.log.Warn("executor gone; its tasks re-queued", "executor", id, "state", state, "tasks", n)
	}
}

// errNoMaster explains a missing --master in cluster mode.
var errNoMaster = errors.New("no master: pass --master or run under berth submit (which sets " + wire.EnvMaster + ")")
