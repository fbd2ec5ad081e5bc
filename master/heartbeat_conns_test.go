package master

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/berth-cluster/berth/internal/httpx"
	"github.com/berth-cluster/berth/testkit/testproc"
	"github.com/berth-cluster/berth/wire"
)

// The edge of the probes, with real sockets: a master's server, workers'
// keep-alive connections, and fake workers' listeners that close or stay.

// probedWorker is a fake worker's API that counts the probes it answers.
type probedWorker struct {
	*httptest.Server
	probes atomic.Int32
}

func newProbedWorker(t *testing.T) *probedWorker {
	pw := &probedWorker{}
	pw.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == wire.WorkerAPI.Health.Pattern {
			pw.probes.Add(1)
		}
		w.Write([]byte("{}"))
	}))
	t.Cleanup(pw.Close)
	return pw
}

// workerState asks the loop for a worker's state and how many probe
// sequences are under way.
func workerState(t *testing.T, m *Master, id string) (wire.WorkerState, int) {
	t.Helper()
	type answer struct {
		state  wire.WorkerState
		probes int
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	a, err := query(ctx, m, func(c *core) (answer, error) {
		w := c.workers[id]
		if w == nil {
			return answer{}, fmt.Errorf("no worker %s", id)
		}
		return answer{w.state, len(c.probes.active)}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return a.state, a.probes
}

// A worker whose process is gone (its listener closed, its connections
// with it) is removed within a second, with a minute's --worker-timeout;
// one whose heartbeat connection closes while it still listens is probed
// and left ALIVE.
func TestAClosedHeartbeatConnectionWithNothingListeningRemovesTheWorker(t *testing.T) {
	m, base := serveMaster(t, Config{WorkerTimeout: time.Minute})
	gone, alive := newProbedWorker(t), newProbedWorker(t)
	clients := map[string]*httpx.Client{}
	for id, srv := range map[string]*probedWorker{"gone": gone, "alive": alive} {
		c := httpx.NewClient("", 5*time.Second).WithIdlePool(2, 2) // a transport of its own, as a worker's
		registerHTTP(t, c, base, id, srv.Server)
		if _, err := httpx.Call(context.Background(), c, base, wire.MasterAPI.WorkerHeartbeat, wire.Heartbeat{}, id); err != nil {
			t.Fatal(err)
		}
		clients[id] = c
	}

	// The live one's connection closes (a re-dial): probed, left ALIVE.
	clients["alive"].HTTP.CloseIdleConnections()
	testproc.Eventually(t, 5*time.Second, "the live worker probed and its probe over", func() error {
		if n := alive.probes.Load(); n == 0 {
			return fmt.Errorf("not probed yet")
		}
		if _, n := workerState(t, m, "alive"); n != 0 {
			return fmt.Errorf("%d probe sequences under way", n)
		}
		return nil
	})
	if st, _ := workerState(t, m, "alive"); st != wire.WorkerAlive {
		t.Fatalf("the worker that still listens is %s, want ALIVE", st)
	}

	// The other dies: its listener closes, then its connections.
	closedAt := time.Now()
	gone.Close()
	clients["gone"].HTTP.CloseIdleConnections()
	testproc.Eventually(t, 5*time.Second, "the gone worker DEAD", func() error {
		if st, _ := workerState(t, m, "gone"); st != wire.WorkerDead {
			return fmt.Errorf("worker is %s", st)
		}
		return nil
	})
	took := time.Since(closedAt)
	t.Logf("DEAD %s after its connection closed (worker timeout 1m)", took.Round(time.Millisecond))
	if floor := probeFirstDelay + probeGap; took < floor {
		t.Errorf("DEAD %s after the close, sooner than its two probes %s apart allow", took, floor)
	}
	if st, _ := workerState(t, m, "alive"); st != wire.WorkerAlive {
		t.Errorf("the live worker is %s, want ALIVE", st)
	}
}

// A connection idle for longer than idleCloseAfter, or hijacked, is no
// hint; one closed soon after a heartbeat is.
func TestHeartbeatConnectionClosesThatAreHints(t *testing.T) {
	var told []string
	h := &heartbeatConns{closed: func(w string) { told = append(told, w) }, tagged: map[net.Conn]*heartbeatConn{}}
	tag := func(worker string) net.Conn {
		c1, c2 := net.Pipe()
		t.Cleanup(func() { c1.Close(); c2.Close() })
		hc := &heartbeatConn{conns: h, conn: c1}
		noteHeartbeatConn(context.WithValue(context.Background(), heartbeatConnKey{}, hc), worker)
		return c1
	}
	recent, idle, hijacked := tag("w1"), tag("w2"), tag("w3")
	h.tagged[idle].last.Store(time.Now().Add(-idleCloseAfter - time.Second).UnixNano())
	untagged, other := net.Pipe()
	defer untagged.Close()
	defer other.Close()

	h.gone(recent, true)
	h.gone(idle, true)
	h.gone(hijacked, false)
	h.gone(untagged, true)
	if len(told) != 1 || told[0] != "w1" {
		t.Errorf("hints for %v, want w1's only", told)
	}
	if len(h.tagged) != 0 {
		t.Errorf("%d connections still tagged after their close", len(h.tagged))
	}
	noteHeartbeatConn(context.Background(), "w4") // a request not served by a watched server: nothing
}
