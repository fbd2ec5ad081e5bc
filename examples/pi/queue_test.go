package main

import (
	"errors"
	"testing"
	"time"
)

func TestQueueLeaseAndFirstResultWins(t *testing.T) {
	tasks := makeTasks(3, 10, 1)
	q := NewQueue(tasks)
	now := time.Unix(1000, 0)
	for want := range 3 {
		got, err := q.Lease(1, now)
		if err != nil || got.ID != want {
			t.Fatalf("lease %d: %+v, %v", want, got, err)
		}
	}
	if _, err := q.Lease(2, now); !errors.Is(err, errNoTask) {
		t.Fatalf("lease with all tasks out: %v, want errNoTask", err)
	}
	if first, err := q.Complete(0, 7); !first || err != nil {
		t.Fatalf("first result: %v, %v", first, err)
	}
	if first, err := q.Complete(0, 3); first || err != nil {
		t.Fatalf("second result of task 0 counted: %v, %v", first, err)
	}
	if _, err := q.Complete(1, 11); err == nil {
		t.Fatal("a result above the samples was accepted")
	}
	if _, err := q.Complete(5, 1); err == nil {
		t.Fatal("a result for an unknown task was accepted")
	}
	q.Complete(1, 5)
	select {
	case <-q.Done():
		t.Fatal("done with a task left")
	default:
	}
	q.Complete(2, 9)
	<-q.Done()
	if inside, samples, n := q.Result(); inside != 21 || samples != 30 || n != 3 {
		t.Fatalf("result %d/%d in %d tasks, want 21/30 in 3", inside, samples, n)
	}
	if _, err := q.Lease(1, now); !errors.Is(err, errJobDone) {
		t.Fatalf("lease after the end: %v, want errJobDone", err)
	}
}

func TestQueueRequeueOnLoss(t *testing.T) {
	q := NewQueue(makeTasks(4, 10, 1))
	now := time.Unix(1000, 0)
	a, _ := q.Lease(1, now)
	b, _ := q.Lease(2, now)
	c, _ := q.Lease(1, now)
	changed := q.Changed()
	if n := q.ExecutorLost(1); n != 2 {
		t.Fatalf("ExecutorLost re-queued %d tasks, want 2", n)
	}
	select {
	case <-changed:
	default:
		t.Fatal("waiters not woken by the re-queue")
	}
	if _, err := q.Lease(1, now); !errors.Is(err, errExecutorLost) {
		t.Fatalf("a lost executor got a task: %v", err)
	}
	// Re-queued tasks come first, in order.
	for _, want := range []int{a.ID, c.ID, 3} {
		got, err := q.Lease(3, now)
		if err != nil || got.ID != want {
			t.Fatalf("lease: %+v, %v; want task %d", got, err, want)
		}
	}
	// The lost executor's late result still counts if it is the first.
	if first, _ := q.Complete(a.ID, 1); !first {
		t.Fatal("late first result rejected")
	}
	if first, _ := q.Complete(a.ID, 1); first {
		t.Fatal("re-run result counted twice")
	}
	_ = b
}

func TestQueueRequeueExceptAndExpired(t *testing.T) {
	q := NewQueue(makeTasks(3, 10, 1))
	t0 := time.Unix(1000, 0)
	q.Lease(1, t0)
	q.Lease(2, t0)
	q.Lease(3, t0.Add(50*time.Second))
	if n := q.RequeueExcept(map[int]bool{1: true, 3: true}); n != 1 {
		t.Fatalf("RequeueExcept re-queued %d, want 1 (executor 2's)", n)
	}
	// Absent from a snapshot is not lost: executor 2 may lease again.
	if got, err := q.Lease(2, t0.Add(50*time.Second)); err != nil || got.ID != 1 {
		t.Fatalf("lease by executor 2: %+v, %v", got, err)
	}
	if n := q.RequeueExpired(t0.Add(61*time.Second), time.Minute); n != 1 {
		t.Fatalf("RequeueExpired re-queued %d, want 1 (task 0, leased 61 s ago)", n)
	}
	if got, err := q.Lease(4, t0.Add(61*time.Second)); err != nil || got.ID != 0 {
		t.Fatalf("lease after expiry: %+v, %v", got, err)
	}
}
