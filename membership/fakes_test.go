package membership

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/berth-cluster/berth/persistence"
	"github.com/berth-cluster/berth/testkit/testproc"
	"github.com/berth-cluster/berth/wire"
)

const secret = "s3cret"

// fakeCluster is this master's view of the replicated state: the masters'
// recorded API addresses and the leader it knows.
type fakeCluster struct {
	mu     sync.Mutex
	api    map[string]string // master id -> recorded API address
	leader string
}

func newFakeCluster() *fakeCluster { return &fakeCluster{api: map[string]string{}} }

func (c *fakeCluster) Load(context.Context) (*persistence.State, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := persistence.NewState()
	for id, addr := range c.api {
		s.Masters[id] = &persistence.MasterRecord{ID: id, APIAddr: addr}
	}
	return s, nil
}

func (c *fakeCluster) LeaderID() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.leader
}

func (c *fakeCluster) record(id, apiAddr string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.api[id] = apiAddr
}

func (c *fakeCluster) setLeader(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.leader = id
}

// fakeMaster serves POST /v1/raft/join, answering with answer and keeping
// the requests it got.
type fakeMaster struct {
	*httptest.Server
	mu     sync.Mutex
	got    []wire.JoinRequest
	answer func(w http.ResponseWriter, req wire.JoinRequest)
}

func newFakeMaster(t *testing.T, answer func(w http.ResponseWriter, req wire.JoinRequest)) *fakeMaster {
	t.Helper()
	m := &fakeMaster{answer: answer}
	m.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && r.URL.Path == wire.MasterAPI.Health.Path() {
			w.Write([]byte("ok\n")) // the client's liveness probe (client/silent.go), open as a master's
			return
		}
		if r.Method != http.MethodPost || r.URL.Path != wire.MasterAPI.JoinMaster.Path() {
			t.Errorf("unexpected %s %s", r.Method, r.URL.Path)
			http.NotFound(w, r)
			return
		}
		if got := r.Header.Get("Authorization"); got != "Bearer "+secret {
			t.Errorf("Authorization %q, want the secret", got)
		}
		var req wire.JoinRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			t.Errorf("decoding the join request: %v", err)
		}
		m.mu.Lock()
		m.got = append(m.got, req)
		m.mu.Unlock()
		m.answer(w, req)
	}))
	t.Cleanup(m.Close)
	return m
}

func (m *fakeMaster) requests() []wire.JoinRequest {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]wire.JoinRequest(nil), m.got...)
}

// accepting adds the master and records its API address in the cluster,
// as the leader does (the record replicates to the joining master).
func accepting(c *fakeCluster) func(http.ResponseWriter, wire.JoinRequest) {
	return func(w http.ResponseWriter, req wire.JoinRequest) {
		c.record(req.ID, req.APIAddr)
		writeJSON(w, http.StatusOK, []wire.MasterNode{{ID: req.ID, RaftAddr: req.RaftAddr, APIAddr: req.APIAddr, Voter: true}})
	}
}

// refusingFirst refuses n requests, then answers with then. It refuses
// with a 500, which the client does not retry by itself (a 503 it would,
// for real seconds), so each refusal costs exactly one of Announce's
// pauses.
func refusingFirst(n int, then func(http.ResponseWriter, wire.JoinRequest)) func(http.ResponseWriter, wire.JoinRequest) {
	var mu sync.Mutex
	return func(w http.ResponseWriter, req wire.JoinRequest) {
		mu.Lock()
		refuse := n > 0
		n--
		mu.Unlock()
		if refuse {
			writeJSON(w, http.StatusInternalServerError, wire.Error{Error: "membership change failed"})
			return
		}
		then(w, req)
	}
}

// redirectingTo answers as a follower does: 307 to the leader.
func redirectingTo(leader *fakeMaster) func(http.ResponseWriter, wire.JoinRequest) {
	return func(w http.ResponseWriter, _ wire.JoinRequest) {
		w.Header().Set("Location", leader.URL+"/v1/raft/join")
		writeJSON(w, http.StatusTemporaryRedirect, wire.Error{Error: "not the leader", Leader: leader.URL})
	}
}

// unexpected fails the test: this master must not be asked.
func unexpected(t *testing.T) func(http.ResponseWriter, wire.JoinRequest) {
	return func(w http.ResponseWriter, req wire.JoinRequest) {
		t.Errorf("a master that should not be asked got %+v", req)
		writeJSON(w, http.StatusInternalServerError, wire.Error{Error: "unexpected"})
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// pace records the pauses Announce asks for and returns at once, after
// running between (if set) with the number of pauses so far: the test's
// hook to change the world between attempts. It ends an Announce that
// keeps going past maxPauses, which no test needs.
type pace struct {
	mu      sync.Mutex
	pauses  []time.Duration
	between func(n int)
}

func (p *pace) wait(ctx context.Context, d time.Duration) error {
	p.mu.Lock()
	p.pauses = append(p.pauses, d)
	n := len(p.pauses)
	p.mu.Unlock()
	if p.between != nil {
		p.between(n)
	}
	if n > maxPauses {
		return errTooManyPauses
	}
	return ctx.Err()
}

const maxPauses = 50

var errTooManyPauses = errors.New("test pace: too many attempts")

func (p *pace) waited() []time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]time.Duration(nil), p.pauses...)
}

// logBuffer collects what Announce logs, at every level.
type logBuffer struct{ testproc.Buffer }

func (b *logBuffer) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(b, &slog.HandlerOptions{Level: slog.LevelDebug}))
}
