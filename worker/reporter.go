package worker

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/berth-cluster/berth/internal/httpx"
	"github.com/berth-cluster/berth/internal/poll"
	"github.com/berth-cluster/berth/wire"
)

// report is one queued state change: exactly one of the two is set.
type report struct {
	executor *wire.ExecutorStateChanged
	driver   *wire.DriverStateChanged
}

// send delivers the report to master, for worker id.
func (r report) send(ctx context.Context, c *httpx.Client, master, id string) error {
	if r.executor != nil {
		_, err := httpx.Call(ctx, c, master, wire.MasterAPI.ExecutorStateReport, *r.executor, id)
		return err
	}
	_, err := httpx.Call(ctx, c, master, wire.MasterAPI.DriverStateReport, *r.driver, id)
	return err
}

// final reports whether the report is of a process that ended.
func (r report) final() bool {
	if r.executor != nil {
		return r.executor.State.Finished()
	}
	return r.driver.State.Finished()
}

func (r report) body() any {
	if r.executor != nil {
		return r.executor
	}
	return r.driver
}

// reportQueue is the FIFO of state changes not yet taken by a master.
// Producers (process runners) never block on it; one goroutine delivers.
type reportQueue struct {
	mu    sync.Mutex
	items []report
	wake  chan struct{} // capacity 1: the queue may have grown
	empty chan struct{} // closed while the queue is empty
}

func newReportQueue() *reportQueue {
	q := &reportQueue{wake: make(chan struct{}, 1), empty: make(chan struct{})}
	close(q.empty)
	return q
}

// unacknowledged returns the final states still queued, as they go into a
// latest state.
func (q *reportQueue) unacknowledged() ([]wire.ExecutorReport, []wire.DriverReport) {
	q.mu.Lock()
	defer q.mu.Unlock()
	var execs []wire.ExecutorReport
	var drivers []wire.DriverReport
	for _, r := range q.items {
		switch {
		case r.executor != nil && r.executor.State.Finished():
			e := r.executor
			execs = append(execs, wire.ExecutorReport{AppID: e.AppID, ExecutorID: e.ExecutorID, State: e.State, ExitCode: e.ExitCode, Message: e.Message, Cause: e.Cause})
		case r.driver != nil && r.driver.State.Finished():
			d := r.driver
			drivers = append(drivers, wire.DriverReport{DriverID: d.DriverID, State: d.State, ExitCode: d.ExitCode, Message: d.Message, OutOfTouch: d.OutOfTouch, Cause: d.Cause})
		}
	}
	return execs, drivers
}

func (q *reportQueue) push(r report) {
	q.mu.Lock()
	if len(q.items) == 0 {
		q.empty = make(chan struct{})
	}
	q.items = append(q.items, r)
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// peek waits for the oldest report, or returns false when ctx ends.
func (q *reportQueue) peek(ctx context.Context) (report, bool) {
	for {
		q.mu.Lock()
		if len(q.items) > 0 {
			r := q.items[0]
			q.mu.Unlock()
			return r, true
		}
		q.mu.Unlock()
		select {
		case <-ctx.Done():
			return report{}, false
		case <-q.wake:
		}
	}
}

// pop drops the oldest report (the one peek returned).
func (q *reportQueue) pop() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.items[0] = report{}
	q.items = q.items[1:]
	if len(q.items) == 0 {
		close(q.empty)
	}
}

// drained returns a channel closed while the queue is empty.
func (q *reportQueue) drained() <-chan struct{} {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.empty
}

func (q *reportQueue) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.items)
}

// deliverLoop sends the queued reports, oldest first, to the master we are
// registered with, until ctx ends. A report is dropped only when the master
// says it cannot apply (404 for an unknown app, executor or driver, or 400);
// anything else is retried, so the order is kept.
func (w *Worker) deliverLoop(ctx context.Context) {
	failures := 0
	for {
		r, ok := w.reports.peek(ctx)
		if !ok {
			return
		}
		master, gen, ready, regCtx := w.sess.current()
		if master == "" {
			select {
			case <-ctx.Done():
				return
			case <-ready:
				continue
			}
		}
		rctx, cancel := within(ctx, regCtx, w.cfg.RequestTimeout)
		err := r.send(rctx, w.client, master, w.id)
		cancel()
		if ctx.Err() != nil {
			return
		}
		if regCtx.Err() != nil {
			continue // registered again meanwhile: send it to the new master
		}
		var se *httpx.StatusError
		switch {
		case err == nil:
			w.reports.pop()
			failures = 0
			continue
		case errors.As(err, &se) && se.Code == wire.CodeUnknownWorker:
			w.log.Warn("master does not know this worker; registering again", "master", master)
			w.sess.lost(gen, master)
			continue // waits for the new registration above
		case errors.As(err, &se) && (se.Status == http.StatusNotFound || se.Status == http.StatusBadRequest):
			// A final state of something the master already forgot (it
			// killed the executor itself, or ended its app) is routine.
			level := slog.LevelWarn
			if se.Status == http.StatusNotFound && r.final() {
				level = slog.LevelDebug
			}
			w.log.Log(ctx, level, "master refused a state report; dropping it", "master", master,
				"report", r.body(), "status", se.Status, "reason", se.Message)
			w.reports.pop()
			failures = 0
			continue
		case errors.As(err, &se) && se.Status == http.StatusUnauthorized:
			w.log.Error("master refused the worker's secret: check --secret / BERTH_SECRET", "master", master)
		case errors.As(err, &se) && se.Status/100 == 4 && se.Status != http.StatusRequestTimeout && se.Status != http.StatusTooManyRequests:
			// Some other refusal (409 ...): the master is alive; retry
			// without looking for another leader.
			w.log.Warn("master refused a state report; retrying", "master", master, "status", se.Status, "reason", se.Message)
		default:
			// No answer, 5xx, or a redirect: the master may be gone.
			w.log.Warn("state report not delivered; looking for the leader", "master", master, "err", err)
			w.sess.lost(gen, leaderOf(err))
		}
		failures++
		if !poll.Sleep(ctx, backoff(failures, 100*time.Millisecond, 2*time.Second)) {
			return
		}
	}
}

// enqueueExecutor queues an executor's state change.
func (w *Worker) enqueueExecutor(s wire.ExecutorStateChanged) {
	w.reports.push(report{executor: &s})
}

// enqueueDriver queues a driver's state change.
func (w *Worker) enqueueDriver(s wire.DriverStateChanged) {
	w.reports.push(report{driver: &s})
}
