package main

import (
	"errors"
	"sync"
	"time"
)

var (
	errNoTask       = errors.New("no task free right now")
	errJobDone      = errors.New("the job is done")
	errExecutorLost = errors.New("this executor was reported lost")
)

type taskStatus int

const (
	pending taskStatus = iota
	leased
	done
)

type taskState struct {
	status   taskStatus
	executor int       // holder of the lease, while leased
	leasedAt time.Time // while leased
}

// Queue hands tasks out to executors and collects results. A task is leased
// to one executor at a time; when that executor is lost, or the lease is too
// old, the task goes back to the queue. The first result of a task counts
// and later ones are ignored, which is safe because a task's result depends
// on its seed alone.
type Queue struct {
	mu      sync.Mutex
	tasks   []Task
	state   []taskState
	pending []int // FIFO of task ids; may hold ids no longer pending
	done    int
	inside  int64
	samples int64
	dead    map[int]bool // executors reported lost: they get no more tasks
	changed chan struct{}
	fin     chan struct{}
}

// NewQueue returns a queue of tasks, all pending.
func NewQueue(tasks []Task) *Queue {
	q := &Queue{
		tasks:   tasks,
		state:   make([]taskState, len(tasks)),
		dead:    map[int]bool{},
		changed: make(chan struct{}),
		fin:     make(chan struct{}),
	}
	for i := range tasks {
		q.pending = append(q.pending, i)
	}
	if len(tasks) == 0 {
		close(q.fin)
	}
	return q
}

// notify wakes the waiters of Changed. Called with mu held.
func (q *Queue) notify() {
	close(q.changed)
	q.changed = make(chan struct{})
}

// Changed returns a channel closed at the next change that may free a task.
func (q *Queue) Changed() <-chan struct{} {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.changed
}

// Done returns a channel closed once every task has a result.
func (q *Queue) Done() <-chan struct{} { return q.fin }

// Lease gives executor the next pending task: errNoTask when all are leased
// (wait on Changed), errJobDone when all are done, errExecutorLost when the
// executor was reported lost (it should exit).
func (q *Queue) Lease(executor int, now time.Time) (Task, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	switch {
	case q.done == len(q.tasks):
		return Task{}, errJobDone
	case q.dead[executor]:
		return Task{}, errExecutorLost
	}
	for len(q.pending) > 0 {
		id := q.pending[0]
		q.pending = q.pending[1:]
		if q.state[id].status == pending {
			q.state[id] = taskState{status: leased, executor: executor, leasedAt: now}
			return q.tasks[id], nil
		}
	}
	return Task{}, errNoTask
}

// Complete records a result. It reports whether it was the task's first
// (the one that counts).
func (q *Queue) Complete(id int, inside int64) (first bool, err error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if id < 0 || id >= len(q.tasks) {
		return false, errors.New("no such task")
	}
	if inside < 0 || inside > q.tasks[id].Samples {
		return false, errors.New("result out of range")
	}
	if q.state[id].status == done {
		return false, nil
	}
	q.state[id] = taskState{status: done}
	q.done++
	q.inside += inside
	q.samples += q.tasks[id].Samples
	if q.done == len(q.tasks) {
		close(q.fin)
		q.notify() // waiting executors learn the job is done
	}
	return true, nil
}

// ExecutorLost re-queues the tasks executor holds and refuses it further
// leases. It returns how many tasks went back.
func (q *Queue) ExecutorLost(executor int) int {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.dead[executor] = true
	return q.requeue(func(s taskState) bool { return s.executor == executor })
}

// RequeueExcept re-queues the tasks of every executor not in alive (absent
// from the master's snapshot). They are not marked lost: a snapshot taken
// while a new leader recovers may not list executors that still run.
func (q *Queue) RequeueExcept(alive map[int]bool) int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.requeue(func(s taskState) bool { return !alive[s.executor] })
}

// RequeueExpired re-queues tasks leased for longer than timeout: the safety
// net for a loss the master never reported.
func (q *Queue) RequeueExpired(now time.Time, timeout time.Duration) int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.requeue(func(s taskState) bool { return now.Sub(s.leasedAt) > timeout })
}

// requeue puts the leased tasks that match back in the queue, ahead of the
// others: they have waited longest. Called with mu held.
func (q *Queue) requeue(match func(taskState) bool) int {
	var back []int
	for id, s := range q.state {
		if s.status == leased && match(s) {
			q.state[id] = taskState{status: pending}
			back = append(back, id)
		}
	}
	if len(back) > 0 {
		q.pending = append(back, q.pending...)
		q.notify()
	}
	return len(back)
}

// Len is the number of tasks of the job.
func (q *Queue) Len() int { return len(q.tasks) }

// Result returns the points inside and all points counted, and the tasks
// done.
func (q *Queue) Result() (inside, samples int64, tasks int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.inside, q.samples, q.done
}
