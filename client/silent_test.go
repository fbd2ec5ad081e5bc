package client

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/berth-cluster/berth/internal/httpx"
	"github.com/berth-cluster/berth/wire"
)

// frozenMaster is a master stopped with SIGSTOP, as the network sees it:
// the kernel accepts the connection and takes what is sent, and nothing
// answers. It keeps what it was sent.
type frozenMaster struct {
	ln   net.Listener
	mu   sync.Mutex
	sent bytes.Buffer
}

func newFrozenMaster(t *testing.T) *frozenMaster {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &frozenMaster{ln: ln}
	var conns []net.Conn
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			f.mu.Lock()
			conns = append(conns, conn)
			f.mu.Unlock()
			wg.Go(func() {
				buf := make([]byte, 4096)
				for {
					n, err := conn.Read(buf)
					f.mu.Lock()
					f.sent.Write(buf[:n])
					f.mu.Unlock()
					if err != nil {
						return
					}
				}
			})
		}
	})
	t.Cleanup(func() {
		ln.Close()
		f.mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		f.mu.Unlock()
		wg.Wait()
	})
	return f
}

func (f *frozenMaster) URL() string { return "http://" + f.ln.Addr().String() }

func (f *frozenMaster) got() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.sent.String()
}

// Two of three masters frozen, the third without a quorum: a write ends
// at the third's no_quorum, certainly not done, without being sent to a
// frozen master (before, each was sent the write and waited its request
// timeout, and berth submit took its whole --timeout), whichever master
// the list names first.
func TestWriteEndsAtNoQuorumBesideFrozenMasters(t *testing.T) {
	noQuorum := newFakeMaster(t, "", func(w http.ResponseWriter, r *http.Request) {
		httpx.WriteErr(w, r, httpx.Coded(http.StatusServiceUnavailable, wire.CodeNoQuorum, "no quorum: this master reaches 1 of 3 masters"))
	})
	for _, first := range []string{"frozen", "alive"} {
		a, b := newFrozenMaster(t), newFrozenMaster(t)
		masters := []string{a.URL(), b.URL(), noQuorum.URL()}
		if first == "alive" {
			masters = []string{noQuorum.URL(), a.URL(), b.URL()}
		}
		c := newTestClient(t, masters, "", WithRequestTimeout(10*time.Second), WithRetryBudget(30*time.Second))
		start := time.Now()
		_, err := c.RegisterApp(context.Background(), wire.AppDescription{Name: "a", Command: []string{"x"}})
		took := time.Since(start)
		if !errors.Is(err, ErrNotDone) || errors.Is(err, ErrUnknownOutcome) || !strings.Contains(err.Error(), "no quorum") {
			t.Errorf("%s master first: %v; want certainly not done, for want of a quorum", first, err)
		}
		// The probes' second, not a frozen master's 10 s request timeout.
		if took > 5*time.Second {
			t.Errorf("%s master first: the write ended after %s, want about the probe's 1 s", first, took)
		}
		for _, f := range []*frozenMaster{a, b} {
			if got := f.got(); strings.Contains(got, "POST ") || !strings.Contains(got, "GET "+wire.MasterAPI.Health.Path()) {
				t.Errorf("%s master first: a frozen master was sent %q, want only the probe", first, got)
			}
		}
	}
}

// A client that has reached its leader, which then froze: the write sent
// to it gets no answer within the request timeout; the others are probed
// before the next is sent it, and the one that answers no_quorum ends the
// call (the leader's attempt may have reached it: outcome unknown).
func TestWriteToAFrozenLeaderProbesTheOthers(t *testing.T) {
	var frozen sync.WaitGroup
	frozen.Add(1)
	leader := newFakeMaster(t, "", func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			httpx.WriteJSON(w, 200, wire.ClusterStatus{})
			return
		}
		frozen.Wait() // frozen from the first write on
	})
	t.Cleanup(frozen.Done)
	noQuorum := newFakeMaster(t, "", func(w http.ResponseWriter, r *http.Request) {
		httpx.WriteErr(w, r, httpx.Coded(http.StatusServiceUnavailable, wire.CodeNoQuorum, "no quorum"))
	})
	other := newFrozenMaster(t)
	c := newTestClient(t, []string{leader.URL(), other.URL(), noQuorum.URL()}, "", WithRequestTimeout(time.Second), WithRetryBudget(30*time.Second))
	if _, err := c.Cluster(context.Background()); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err := c.RegisterApp(context.Background(), wire.AppDescription{Name: "a", Command: []string{"x"}})
	if !errors.Is(err, ErrUnknownOutcome) || !strings.Contains(err.Error(), "no quorum") {
		t.Errorf("write to a frozen leader: %v; want outcome unknown, ended by no quorum", err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("ended after %s: want the leader's timeout (1 s) and the probes' (1 s), not the 30 s budget", took)
	}
	if got := other.got(); strings.Contains(got, "POST ") {
		t.Errorf("the frozen follower was sent %q, want only the probe", got)
	}
}
