package master

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/berth-cluster/berth/internal/httpx"
	"github.com/berth-cluster/berth/testkit/testproc"
	"github.com/berth-cluster/berth/wire"
)

// fakeWorkers serves every simulated worker's commands at one address:
// kills name their worker in AppID and their order in ExecutorID.
type fakeWorkers struct {
	srv      *httptest.Server
	gate     chan struct{} // closed to let held requests answer
	inFlight atomic.Int64
	maxSeen  atomic.Int64
	mu       sync.Mutex
	got      map[string][]int // worker → ExecutorIDs in arrival order
	calls    map[string]int   // path → requests
	status   int              // answer to every request
}

func newFakeWorkers(t *testing.T, status int, held bool) *fakeWorkers {
	f := &fakeWorkers{gate: make(chan struct{}), got: map[string][]int{}, calls: map[string]int{}, status: status}
	if !held {
		close(f.gate)
	}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := f.inFlight.Add(1)
		defer f.inFlight.Add(-1)
		for m := f.maxSeen.Load(); n > m && !f.maxSeen.CompareAndSwap(m, n); m = f.maxSeen.Load() {
		}
		var k wire.KillExecutor
		json.NewDecoder(r.Body).Decode(&k)
		<-f.gate
		f.mu.Lock()
		f.calls[r.URL.Path]++
		if k.AppID != "" {
			f.got[k.AppID] = append(f.got[k.AppID], k.ExecutorID)
		}
		f.mu.Unlock()
		w.WriteHeader(f.status)
		w.Write([]byte("{}"))
	}))
	t.Cleanup(func() {
		select {
		case <-f.gate:
		default:
			close(f.gate)
		}
		f.srv.Close()
	})
	return f
}

func killFor(worker string, seq int) workerCommand {
	return commandOn(wire.WorkerAPI.KillExecutor, wire.KillExecutor{Epoch: 1, AppID: worker, ExecutorID: seq})
}

// Commands reach each worker in order, and no more than maxDeliverers
// workers are sent to at once however many have commands.
func TestOutboxKeepsOrderAndBoundsDeliveries(t *testing.T) {
	f := newFakeWorkers(t, http.StatusOK, true)
	o := newOutbox(httpx.NewClient("", 10*time.Second), discardLogger(), func(id string, cmd workerCommand, err error) {
		t.Errorf("command to %s failed: %v", id, err)
	})
	defer o.close()
	const workers, each = maxDeliverers + 100, 5
	for seq := range each {
		for w := range workers {
			o.send(fmt.Sprintf("w%03d", w), f.srv.URL, killFor(fmt.Sprintf("w%03d", w), seq))
		}
	}
	testproc.Eventually(t, 10*time.Second, "every deliverer busy", func() bool { return f.inFlight.Load() == maxDeliverers })
	close(f.gate)
	testproc.Eventually(t, 20*time.Second, "every command delivered", func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.calls[wire.WorkerAPI.KillExecutor.Path()] == workers*each
	})
	if m := f.maxSeen.Load(); m > maxDeliverers {
		t.Errorf("%d deliveries at once, the bound is %d", m, maxDeliverers)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for w, seqs := range f.got {
		for i, s := range seqs {
			if s != i {
				t.Fatalf("worker %s got its commands in the order %v", w, seqs)
			}
		}
	}
	// A deliverer forgets its worker's queue once the last answer is in,
	// which is just after the worker counted the command.
	testproc.Eventually(t, 10*time.Second, "no queue left after delivery", func() bool {
		o.mu.Lock()
		defer o.mu.Unlock()
		return len(o.queues) == 0 && len(o.ready) == 0
	})
}

// A failing worker gets a command four times (three retries) before the
// loop hears of it, a Reconnect too; but a Reconnect to an address where
// nothing listens is sent once (the worker registers when it starts).
func TestOutboxRetriesFailedCommands(t *testing.T) {
	f := newFakeWorkers(t, http.StatusServiceUnavailable, false)
	failed := make(chan string, 2)
	o := newOutbox(httpx.NewClient("", 10*time.Second), discardLogger(), func(_ string, cmd workerCommand, _ error) { failed <- cmd.route.Pattern })
	defer o.close()
	reconnect := commandOn(wire.WorkerAPI.Reconnect, wire.Reconnect{Epoch: 2, Master: "http://127.0.0.1:1"})
	o.send("w1", f.srv.URL, reconnect)
	o.send("w2", f.srv.URL, killFor("w2", 0))
	got := map[string]bool{}
	for range 2 {
		got[testproc.Receive(t, failed, 10*time.Second, "a failed command")] = true
	}
	if !got[wire.WorkerAPI.Reconnect.Pattern] || !got[wire.WorkerAPI.KillExecutor.Pattern] {
		t.Fatalf("failed commands: %v", got)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, path := range []string{wire.WorkerAPI.Reconnect.Path(), wire.WorkerAPI.KillExecutor.Path()} {
		if n := f.calls[path]; n != 1+len(outboxRetryDelays) {
			t.Errorf("%s sent %d times, want %d", path, n, 1+len(outboxRetryDelays))
		}
	}

	// Retried, it would wait an hour: it must be given up at once.
	o.delays = []time.Duration{time.Hour}
	o.send("w3", testproc.ClosedURL(t), reconnect)
	if k := testproc.Receive(t, failed, 10*time.Second, "the refused Reconnect given up"); k != wire.WorkerAPI.Reconnect.Pattern {
		t.Errorf("gave up on a %v", k)
	}
}

// Dropping the outbox (leadership lost) discards what is queued: a deposed
// leader sends nothing more; the outbox serves the next leadership.
func TestOutboxDropDiscardsQueuedCommands(t *testing.T) {
	f := newFakeWorkers(t, http.StatusOK, true)
	o := newOutbox(httpx.NewClient("", 10*time.Second), discardLogger(), func(string, workerCommand, error) {})
	defer o.close()
	o.send("w1", f.srv.URL, killFor("w1", 0))
	o.send("w1", f.srv.URL, killFor("w1", 1))
	testproc.Eventually(t, 10*time.Second, "the first command in flight", func() bool { return f.inFlight.Load() == 1 })
	o.drop()
	o.send("w2", f.srv.URL, killFor("w2", 0))
	close(f.gate)
	testproc.Eventually(t, 10*time.Second, "the new leadership's command delivered", func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		return len(f.got["w2"]) == 1
	})
	testproc.Stable(t, 300*time.Millisecond, "the dropped command", func() error {
		f.mu.Lock()
		defer f.mu.Unlock()
		if len(f.got["w1"]) > 1 {
			return fmt.Errorf("sent after the drop: %v", f.got["w1"])
		}
		return nil
	})
}

// A worker that fails its commands waits for each retry outside the pool:
// with a single deliverer, a healthy worker's command still goes out at
// once, long before the failing one's retries are over.
func TestOutboxRetriesDoNotHoldADeliverer(t *testing.T) {
	failing := newFakeWorkers(t, http.StatusServiceUnavailable, false)
	healthy := newFakeWorkers(t, http.StatusOK, false)
	failed := make(chan string, 1)
	o := newOutbox(httpx.NewClient("", 10*time.Second), discardLogger(), func(id string, _ workerCommand, _ error) { failed <- id })
	o.max = 1
	defer o.close()
	o.send("bad", failing.srv.URL, killFor("bad", 0))
	testproc.Eventually(t, 10*time.Second, "the failing worker's first attempt", func() bool {
		failing.mu.Lock()
		defer failing.mu.Unlock()
		return failing.calls[wire.WorkerAPI.KillExecutor.Path()] >= 1
	})
	o.send("good", healthy.srv.URL, killFor("good", 0))
	testproc.Eventually(t, 10*time.Second, "the healthy worker's command", func() bool {
		healthy.mu.Lock()
		defer healthy.mu.Unlock()
		return len(healthy.got["good"]) == 1
	})
	failing.mu.Lock()
	tries := failing.calls[wire.WorkerAPI.KillExecutor.Path()]
	failing.mu.Unlock()
	if tries >= 1+len(outboxRetryDelays) {
		t.Errorf("the healthy worker waited for all %d attempts of the failing one", tries)
	}
	if id := testproc.Receive(t, failed, 10*time.Second, "the failing command given up"); id != "bad" {
		t.Errorf("gave up on %s", id)
	}
	failing.mu.Lock()
	defer failing.mu.Unlock()
	if n := failing.calls[wire.WorkerAPI.KillExecutor.Path()]; n != 1+len(outboxRetryDelays) {
		t.Errorf("failing command sent %d times, want %d", n, 1+len(outboxRetryDelays))
	}
}

// kick (a worker registered again) abandons an attempt stuck in flight
// and sends the command again at once on a new connection, instead of
// after the request's timeout and a retry delay.
func TestOutboxKickResendsAStuckCommandAtOnce(t *testing.T) {
	stuck := make(chan struct{})
	var calls atomic.Int64
	delivered := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			select { // the first attempt: as a connection whose packets are dropped
			case <-stuck:
			case <-r.Context().Done():
			}
			return
		}
		w.Write([]byte("{}"))
		delivered <- struct{}{}
	}))
	defer srv.Close()
	defer close(stuck)
	failed := make(chan error, 1)
	o := newOutbox(httpx.NewClient("", time.Hour), discardLogger(), func(_ string, _ workerCommand, err error) { failed <- err })
	o.delays = []time.Duration{time.Hour} // a retry after a failure would come too late for this test
	defer o.close()
	o.send("w1", srv.URL, killFor("w1", 0))
	testproc.Eventually(t, 10*time.Second, "the first attempt in flight", func() bool {
		o.mu.Lock()
		defer o.mu.Unlock()
		q := o.queues["w1"]
		return calls.Load() == 1 && q != nil && q.abandon != nil
	})
	o.kick("w1")
	select {
	case <-delivered:
	case err := <-failed:
		t.Fatalf("the kicked command failed: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("the kicked command was not sent again")
	}
	if n := calls.Load(); n != 2 {
		t.Errorf("%d attempts, want 2", n)
	}
	o.kick("w1") // nothing in flight: nothing happens
}
