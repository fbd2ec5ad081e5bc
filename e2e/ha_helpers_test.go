package e2e

// Helpers of the high-availability tests (ha_test.go): clusters of Raft
// masters on 127.0.0.1..3, direct per-master queries (a client would follow
// the leader; these tests must see each master's own answer), executors that
// are real long-running processes found by a marker, and app event streams
// recorded for assertions.

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/berth-cluster/berth/client"
	"github.com/berth-cluster/berth/wire"
)

// haCluster is one test's cluster: Raft masters m1..mN on 127.0.0.1..N.
type haCluster struct {
	t       *testing.T
	masters []*masterProc
	// marker is carried by the command line of every executor this
	// cluster's apps start, and by nothing else on the machine.
	marker string
}

// haStartCluster starts n Raft masters (ids m1..mn, master i on 127.0.0.i,
// free API and Raft ports) with the extra flags, and waits for an ALIVE
// leader.
func haStartCluster(t *testing.T, n int, extra ...string) *haCluster {
	t.Helper()
	hc := &haCluster{t: t, marker: "hamark-" + haRandom()}
	// Registered first, so it runs last: after the harness has killed the
	// workers, whose children die with them (Pdeathsig), kill any executor
	// of ours that is somehow left, by pid.
	t.Cleanup(func() {
		for _, pid := range pidsOf(hc.marker) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	ips := make([]string, n)
	raftPorts := make([]int, n)
	var peers []string
	for i := range n {
		ips[i] = fmt.Sprintf("127.0.0.%d", i+1)
		raftPorts[i] = freePort(t, ips[i])
		peers = append(peers, fmt.Sprintf("m%d=%s:%d", i+1, ips[i], raftPorts[i]))
	}
	for i := range n {
		hc.masters = append(hc.masters, startMaster(t, masterOpts{
			ip: ips[i], id: fmt.Sprintf("m%d", i+1), raftPort: raftPorts[i],
			peers: strings.Join(peers, ","), extra: extra,
		}))
	}
	hc.leader(20*time.Second, nil)
	return hc
}

func haRandom() string {
	b := make([]byte, 6)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// urls lists the masters' API addresses.
func (hc *haCluster) urls() []string {
	var out []string
	for _, m := range hc.masters {
		out = append(out, m.url)
	}
	return out
}

// others returns the masters but the given ones.
func (hc *haCluster) others(not ...*masterProc) []*masterProc {
	var out []*masterProc
	for _, m := range hc.masters {
		if !slices.Contains(not, m) {
			out = append(out, m)
		}
	}
	return out
}

// byID returns the master with the id.
func (hc *haCluster) byID(id string) *masterProc {
	for _, m := range hc.masters {
		if m.id == id {
			return m
		}
	}
	hc.t.Fatalf("no master %q in this cluster", id)
	return nil
}

// leader waits until one of the candidates (every master when nil) answers
// GET /v1/cluster as the ALIVE leader, and returns it with its status.
func (hc *haCluster) leader(timeout time.Duration, candidates []*masterProc) (*masterProc, wire.ClusterStatus) {
	hc.t.Helper()
	if candidates == nil {
		candidates = hc.masters
	}
	var lm *masterProc
	var st wire.ClusterStatus
	eventually(hc.t, timeout, "an ALIVE leader among "+haIDs(candidates), func() error {
		var seen []string
		for _, m := range candidates {
			if m.exited() {
				continue
			}
			s, err := haCluster1(m.url)
			if err != nil {
				seen = append(seen, fmt.Sprintf("%s: %v", m.id, err))
				continue
			}
			if s.View == wire.ViewLeader && s.Status == wire.MasterAlive {
				lm, st = m, s
				return nil
			}
			seen = append(seen, fmt.Sprintf("%s: %s %s (leader %q)", m.id, s.View, s.Status, s.LeaderID))
		}
		return fmt.Errorf("%s", strings.Join(seen, "; "))
	})
	return lm, st
}

func haIDs(ms []*masterProc) string {
	var ids []string
	for _, m := range ms {
		ids = append(ids, m.id)
	}
	return strings.Join(ids, ",")
}

// haHTTP is the client of the direct calls: short timeouts, so that a
// stopped (SIGSTOP) master makes a call fail rather than hang the test.
var haHTTP = &http.Client{
	Timeout:       2 * time.Second,
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
}

// haDo sends one request with the cluster secret (in marshalled to JSON
// unless nil) and returns the status and body.
func haDo(method, url string, in any) (int, []byte, error) {
	var body io.Reader
	if in != nil {
		data, err := json.Marshal(in)
		if err != nil {
			return 0, nil, err
		}
		body = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+secret)
	req.Header.Set("Content-Type", "application/json")
	resp, err := haHTTP.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	return resp.StatusCode, data, err
}

// haGetJSON GETs url (with the secret) and decodes a 200 answer into out.
func haGetJSON(url string, out any) error {
	status, body, err := haDo(http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	if status != http.StatusOK {
		return fmt.Errorf("GET %s: %d %s", url, status, strings.TrimSpace(string(body)))
	}
	return json.Unmarshal(body, out)
}

// haCluster1 is one master's own answer to GET /v1/cluster.
func haCluster1(masterURL string) (wire.ClusterStatus, error) {
	var st wire.ClusterStatus
	err := haGetJSON(masterURL+"/v1/cluster", &st)
	return st, err
}

// haWorkerState is a worker's GET /v1/state: what it runs, the newest epoch
// it has seen and the master it is registered with.
func haWorkerState(workerURL string) (wire.WorkerLatestState, error) {
	var st wire.WorkerLatestState
	err := haGetJSON(workerURL+"/v1/state", &st)
	return st, err
}

// haReadyz is the status of GET /readyz (with the secret) and its body.
func haReadyz(masterURL string) (int, string) {
	status, body, err := haDo(http.MethodGet, masterURL+"/readyz", nil)
	if err != nil {
		return 0, err.Error()
	}
	return status, strings.TrimSpace(string(body))
}

// app returns a long-running app's description: executors of 1 core and
// 64 MB whose process (a shell waiting for a sleep) carries the cluster's
// marker followed by "<app id>/<executor id>" on its command line.
func (hc *haCluster) app(name string, maxCores int) wire.AppDescription {
	return wire.AppDescription{
		Name:                name,
		Command:             hc.execCommand(),
		MaxCores:            maxCores,
		CoresPerExecutor:    1,
		MemoryPerExecutorMB: 64,
	}
}

func (hc *haCluster) execCommand() []string {
	// The shell forks sleep and waits (a command follows it), so the
	// process that carries the marker lives as long as the executor.
	return []string{"/bin/sh", "-c", "sleep 3600; : " + hc.marker + " " + wire.PlaceholderAppID + "/" + wire.PlaceholderExecutorID}
}

// execPids maps "<app id>/<executor id>" to the pid of every executor
// process of this cluster now alive.
func (hc *haCluster) execPids() map[string]int {
	out := map[string]int{}
	for _, pid := range pidsOf(hc.marker) {
		cmdline, err := os.ReadFile(filepath.Join("/proc", fmt.Sprint(pid), "cmdline"))
		if err != nil {
			continue
		}
		_, rest, ok := strings.Cut(string(cmdline), hc.marker+" ")
		if !ok {
			continue
		}
		key, _, _ := strings.Cut(rest, "\x00")
		if prev, dup := out[key]; dup {
			// Two processes for one executor: report both.
			out[key+"#dup"] = prev
		}
		out[key] = pid
	}
	return out
}

// haExecKey is the key of execPids.
func haExecKey(appID string, execID int) string { return fmt.Sprintf("%s/%d", appID, execID) }

// haExecutors returns an app's executors in a state, by id, in a leader's
// view.
func haExecutors(st wire.ClusterStatus, appID string, state wire.ExecutorState) map[int]wire.ExecutorStatus {
	out := map[int]wire.ExecutorStatus{}
	if a, ok := appStatus(st, appID); ok {
		for _, e := range executorsIn(a, state) {
			out[e.ID] = e
		}
	}
	return out
}

// haWorkerIn returns a worker's status in a view.
func haWorkerIn(st wire.ClusterStatus, id string) (wire.WorkerStatus, bool) {
	for _, w := range st.Workers {
		if w.ID == id {
			return w, true
		}
	}
	return wire.WorkerStatus{}, false
}

// haAppIDs lists the ids of every app (active and completed) of a view.
func haAppIDs(st wire.ClusterStatus) []string {
	var ids []string
	for _, a := range append(append([]wire.AppStatus(nil), st.ActiveApps...), st.CompletedApps...) {
		ids = append(ids, a.ID)
	}
	slices.Sort(ids)
	return ids
}

// haDriverIDs lists the ids of every driver (active and completed) of a
// view.
func haDriverIDs(st wire.ClusterStatus) []string {
	var ids []string
	for _, d := range append(append([]wire.DriverStatus(nil), st.ActiveDrivers...), st.CompletedDrivers...) {
		ids = append(ids, d.ID)
	}
	slices.Sort(ids)
	return ids
}

// haStream records an app's event stream, followed through client.Events
// (reconnecting across failovers) until the test ends.
type haStream struct {
	mu     sync.Mutex
	events []haEvent
	done   chan struct{}
	err    error
}

type haEvent struct {
	wire.AppEvent
	at time.Time // when the test received it
}

// haFollow follows an app's events with c; the stream is the app's lease.
func haFollow(t *testing.T, c *client.Client, appID string) *haStream {
	ctx, cancel := context.WithCancel(context.Background())
	s := &haStream{done: make(chan struct{})}
	go func() {
		defer close(s.done)
		err := c.Events(ctx, appID, func(ev wire.AppEvent) error {
			s.mu.Lock()
			s.events = append(s.events, haEvent{ev, time.Now()})
			s.mu.Unlock()
			return nil
		})
		s.mu.Lock()
		s.err = err
		s.mu.Unlock()
	}()
	t.Cleanup(func() {
		cancel()
		<-s.done
	})
	return s
}

// of returns the events of a type received so far.
func (s *haStream) of(typ wire.EventType) []haEvent {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []haEvent
	for _, ev := range s.events {
		if ev.Type == typ {
			out = append(out, ev)
		}
	}
	return out
}

// ended reports whether Events returned, and its error.
func (s *haStream) ended() (bool, error) {
	select {
	case <-s.done:
		s.mu.Lock()
		defer s.mu.Unlock()
		return true, s.err
	default:
		return false, nil
	}
}

// types summarises the stream, for failure messages.
func (s *haStream) types() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, ev := range s.events {
		out = append(out, string(ev.Type))
	}
	return strings.Join(out, ",")
}

// runningApp waits until the ALIVE leader shows the app with want RUNNING
// executors, each with its process alive, and returns the leader's view.
func (hc *haCluster) runningApp(appID string, want int, timeout time.Duration) wire.ClusterStatus {
	hc.t.Helper()
	var st wire.ClusterStatus
	eventually(hc.t, timeout, fmt.Sprintf("app %s with %d RUNNING executors and their processes", appID, want), func() error {
		var err error
		_, st, err = hc.findLeader()
		if err != nil {
			return err
		}
		running := haExecutors(st, appID, wire.ExecutorRunning)
		if len(running) != want {
			a, _ := appStatus(st, appID)
			return fmt.Errorf("%d RUNNING executors in %s's view (app %s, executors %+v)", len(running), st.MasterID, a.State, a.Executors)
		}
		pids := hc.execPids()
		for id := range running {
			if _, ok := pids[haExecKey(appID, id)]; !ok {
				return fmt.Errorf("no process for executor %d", id)
			}
		}
		return nil
	})
	return st
}

// waitWorkers waits until the ALIVE leader lists the workers ALIVE (before
// an app registers, so that placement spreads it over all of them).
func (hc *haCluster) waitWorkers(ids ...string) {
	hc.t.Helper()
	eventually(hc.t, 20*time.Second, "workers "+strings.Join(ids, ",")+" ALIVE", func() error {
		_, st, err := hc.findLeader()
		if err != nil {
			return err
		}
		for _, id := range ids {
			if w, ok := haWorkerIn(st, id); !ok || w.State != wire.WorkerAlive {
				return fmt.Errorf("%s: %+v (listed %v)", id, w, ok)
			}
		}
		return nil
	})
}

// findLeader asks every live master once and returns the ALIVE leader.
func (hc *haCluster) findLeader() (*masterProc, wire.ClusterStatus, error) {
	for _, m := range hc.masters {
		if m.exited() {
			continue
		}
		if st, err := haCluster1(m.url); err == nil && st.View == wire.ViewLeader && st.Status == wire.MasterAlive {
			return m, st, nil
		}
	}
	return nil, wire.ClusterStatus{}, fmt.Errorf("no ALIVE leader now")
}

// haPidSampler checks, every 50 ms until stopped, that the executors'
// processes stay exactly the ones it started with: none killed, none
// replaced, none added.
type haPidSampler struct {
	stop     chan struct{}
	done     chan struct{}
	mu       sync.Mutex
	problems []string
	samples  int
}

// samplePids starts a sampler expecting exactly want (see execPids).
func (hc *haCluster) samplePids(want map[string]int) *haPidSampler {
	p := &haPidSampler{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			got := hc.execPids()
			p.mu.Lock()
			p.samples++
			if !haMapsEqual(got, want) && len(p.problems) < 10 {
				p.problems = append(p.problems, fmt.Sprintf("%s: executor processes %v, want %v", time.Now().Format("15:04:05.000"), got, want))
			}
			p.mu.Unlock()
			select {
			case <-p.stop:
				return
			case <-t.C:
			}
		}
	}()
	hc.t.Cleanup(p.finish)
	return p
}

// finish stops the sampler (idempotent).
func (p *haPidSampler) finish() {
	select {
	case <-p.stop:
	default:
		close(p.stop)
	}
	<-p.done
}

// check stops the sampler and fails the test if any sample differed.
func (p *haPidSampler) check(t *testing.T) {
	t.Helper()
	p.finish()
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.problems) > 0 {
		t.Errorf("executor processes changed during the test (%d samples):\n%s", p.samples, strings.Join(p.problems, "\n"))
	}
}

func haMapsEqual(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// haCheckWorkersListOnce checks that across the workers' own GET /v1/state
// every executor of the app is listed exactly once, and that exactly want
// are.
func haCheckWorkersListOnce(t *testing.T, workerURLs []string, appID string, want map[string]int) {
	t.Helper()
	seen := map[string]int{}
	for _, u := range workerURLs {
		st, err := haWorkerState(u)
		if err != nil {
			t.Errorf("worker %s state: %v", u, err)
			continue
		}
		for _, e := range st.Executors {
			if e.AppID == appID {
				seen[haExecKey(e.AppID, e.ExecutorID)]++
			}
		}
	}
	for k, n := range seen {
		if n != 1 {
			t.Errorf("executor %s listed %d times by the workers", k, n)
		}
		if _, ok := want[k]; !ok {
			t.Errorf("workers run executor %s, which should not exist", k)
		}
	}
	for k := range want {
		if seen[k] == 0 {
			t.Errorf("executor %s is not listed by any worker", k)
		}
	}
}
