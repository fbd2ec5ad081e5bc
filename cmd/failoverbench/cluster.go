package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/berth-cluster/berth/client"
	"github.com/berth-cluster/berth/wire"
)

// masterNode is one master: its identity, flags and data survive restarts.
type masterNode struct {
	id, ip, url, raftAddr, dataDir string
	args                           []string
	proc                           *proc
	starts                         int
	cl                             *cluster
}

// workerNode is one worker daemon.
type workerNode struct {
	id, ip, workDir string
	args            []string
	proc            *proc
}

// cluster is a set of masters and workers started by this tool.
type cluster struct {
	name    string
	cfg     *config
	root    string // the work directory: logs/ and slow/ are here
	dir     string // this cluster's data: root/<name>
	ps      *procs
	hc      *http.Client
	masters []*masterNode
	workers []*workerNode
	app     *holder // nil without --executors
	// execs are the executor processes of the app, pid → start time, found
	// once they all ran; every round checks they are still the same.
	execs   map[int]uint64
	execIDs []int
}

func newCluster(name string, cfg *config, ps *procs, root string) (*cluster, error) {
	dir := filepath.Join(root, name)
	for _, d := range []string{filepath.Join(root, "logs"), dir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 16
	return &cluster{name: name, cfg: cfg, root: root, dir: dir, ps: ps, hc: &http.Client{Transport: tr}}, nil
}

// masterIP is the loopback address of master i (0-based): 127.0.0.1, .2, ...
func masterIP(i int) string { return fmt.Sprintf("127.0.0.%d", i+1) }

// workerIP is the loopback address of worker i: 127.0.0.21, .22, ...
func workerIP(i int) string { return fmt.Sprintf("127.0.0.%d", 21+i) }

// startRaftMasters starts n masters replicating through Raft, each on its
// own loopback address, and waits until they answer /healthz.
func (cl *cluster) startRaftMasters(ctx context.Context, n int) error {
	var peers []string
	for i := range n {
		ip := masterIP(i)
		api, err := freePort(ip)
		if err != nil {
			return err
		}
		raft, err := freePort(ip)
		for tries := 0; err == nil && raft == api && tries < 10; tries++ {
			raft, err = freePort(ip)
		}
		if err != nil {
			return err
		}
		m := &masterNode{
			id: fmt.Sprintf("m%d", i+1), ip: ip, url: fmt.Sprintf("http://%s:%d", ip, api),
			raftAddr: fmt.Sprintf("%s:%d", ip, raft), dataDir: filepath.Join(cl.dir, fmt.Sprintf("m%d", i+1)), cl: cl,
		}
		peers = append(peers, m.id+"="+m.raftAddr)
		cl.masters = append(cl.masters, m)
	}
	for _, m := range cl.masters {
		m.args = append([]string{
			"--node-id", m.id, "--host", m.ip, "--port", strconv.Itoa(portOf(m.url)),
			"--raft-addr", m.raftAddr, "--peers", strings.Join(peers, ","),
			"--raft-multiplier", strconv.Itoa(cl.cfg.raftMultiplier),
			"--data-dir", m.dataDir,
		}, cl.cfg.commonMasterArgs()...)
	}
	return cl.startMasters(ctx)
}

// startBoltMaster starts one master keeping its state in bbolt.
func (cl *cluster) startBoltMaster(ctx context.Context) error {
	ip := masterIP(0)
	api, err := freePort(ip)
	if err != nil {
		return err
	}
	m := &masterNode{id: "b1", ip: ip, url: fmt.Sprintf("http://%s:%d", ip, api), dataDir: filepath.Join(cl.dir, "b1"), cl: cl}
	m.args = append([]string{
		"--node-id", m.id, "--host", m.ip, "--port", strconv.Itoa(api),
		"--recovery-mode", "bolt", "--data-dir", m.dataDir,
	}, cl.cfg.commonMasterArgs()...)
	cl.masters = append(cl.masters, m)
	return cl.startMasters(ctx)
}

func (cl *cluster) startMasters(ctx context.Context) error {
	for _, m := range cl.masters {
		if err := m.start(); err != nil {
			return err
		}
	}
	for _, m := range cl.masters {
		if err := waitHealthy(ctx, m.proc, m.url, 30*time.Second); err != nil {
			return err
		}
	}
	return nil
}

func portOf(url string) int {
	i := strings.LastIndexByte(url, ':')
	p, _ := strconv.Atoi(url[i+1:])
	return p
}

// start runs the master (again), with the same flags and data; each run
// logs to its own file, logs/<cluster>-<id>.<n>.log.
func (m *masterNode) start() error {
	m.starts++
	logPath := filepath.Join(m.cl.root, "logs", fmt.Sprintf("%s-%s.%d.log", m.cl.name, m.id, m.starts))
	p, err := m.cl.ps.start(m.id, m.cl.cfg.masterBin(), m.args, logPath)
	if err != nil {
		return err
	}
	m.proc = p
	return nil
}

func (m *masterNode) running() bool { return m.proc != nil && !m.proc.exited() }

// urls are the API addresses of the masters.
func (cl *cluster) urls() []string {
	var out []string
	for _, m := range cl.masters {
		out = append(out, m.url)
	}
	return out
}

// startWorkers starts n workers listing every master, and waits until the
// leader has them all ALIVE.
func (cl *cluster) startWorkers(ctx context.Context, n int) error {
	masters := strings.Join(cl.urls(), ",")
	for i := range n {
		w := &workerNode{id: fmt.Sprintf("w%02d", i+1), ip: workerIP(i)}
		w.workDir = filepath.Join(cl.dir, w.id)
		w.args = []string{
			"--master", masters, "--secret", cl.cfg.secret, "--host", w.ip, "--port", "0", "--id", w.id,
			"--cores", strconv.Itoa(cl.cfg.workerCores), "--memory", cl.cfg.workerMemory,
			"--work-dir", w.workDir, "--log-level", cl.cfg.logLevel,
		}
		p, err := cl.ps.start(w.id, cl.cfg.workerBin(), w.args, filepath.Join(cl.root, "logs", fmt.Sprintf("%s-%s.log", cl.name, w.id)))
		if err != nil {
			return err
		}
		w.proc = p
		cl.workers = append(cl.workers, w)
	}
	_, _, err := cl.steady(ctx, 60*time.Second, false)
	return err
}

// status is one GET /v1/cluster on url, bounded by timeout.
func (cl *cluster) status(ctx context.Context, url string, timeout time.Duration) (wire.ClusterStatus, error) {
	var st wire.ClusterStatus
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"/v1/cluster", nil)
	if err != nil {
		return st, err
	}
	req.Header.Set("Authorization", "Bearer "+cl.cfg.secret)
	resp, err := cl.hc.Do(req)
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return st, fmt.Errorf("GET %s/v1/cluster: %s: %s", url, resp.Status, strings.TrimSpace(string(body)))
	}
	err = json.NewDecoder(resp.Body).Decode(&st)
	return st, err
}

func aliveWorkers(st wire.ClusterStatus) int {
	n := 0
	for _, w := range st.Workers {
		if w.State == wire.WorkerAlive {
			n++
		}
	}
	return n
}

func findApp(st wire.ClusterStatus, id string) (wire.AppStatus, bool) {
	for _, a := range st.ActiveApps {
		if a.ID == id {
			return a, true
		}
	}
	return wire.AppStatus{}, false
}

func runningExecutors(a wire.AppStatus) []int {
	var ids []int
	for _, e := range a.Executors {
		if e.State == wire.ExecutorRunning {
			ids = append(ids, e.ID)
		}
	}
	slices.Sort(ids)
	return ids
}

// steadyProblem says what keeps the cluster from being steady, "" if
// nothing: one ALIVE leader with every worker ALIVE (and the app RUNNING
// with all its executors), every other running master its caught-up
// follower.
func (cl *cluster) steadyProblem(ctx context.Context, withApp bool) (*masterNode, wire.ClusterStatus, string) {
	var leader *masterNode
	var lst wire.ClusterStatus
	views := map[*masterNode]wire.ClusterStatus{}
	for _, m := range cl.masters {
		if !m.running() {
			continue
		}
		st, err := cl.status(ctx, m.url, 2*time.Second)
		if err != nil {
			return nil, lst, fmt.Sprintf("%s: %v", m.id, err)
		}
		views[m] = st
		if st.View == wire.ViewLeader {
			if leader != nil {
				return nil, lst, fmt.Sprintf("two leader views: %s and %s", leader.id, m.id)
			}
			leader, lst = m, st
		}
	}
	if leader == nil {
		return nil, lst, "no leader"
	}
	if lst.Status != wire.MasterAlive {
		return nil, lst, fmt.Sprintf("leader %s is %s", leader.id, lst.Status)
	}
	if n := aliveWorkers(lst); n != len(cl.workers) {
		return nil, lst, fmt.Sprintf("leader %s has %d/%d workers ALIVE", leader.id, n, len(cl.workers))
	}
	for m, st := range views {
		if m == leader {
			continue
		}
		if st.View != wire.ViewFollower || st.LeaderID != leader.id || st.Epoch != lst.Epoch {
			return nil, lst, fmt.Sprintf("%s is not a caught-up follower (view %s, leader %q, epoch %d; leader epoch %d)", m.id, st.View, st.LeaderID, st.Epoch, lst.Epoch)
		}
	}
	if withApp && cl.app != nil {
		a, ok := findApp(lst, cl.app.id)
		if !ok {
			return nil, lst, fmt.Sprintf("app %s is not active", cl.app.id)
		}
		if a.State != wire.AppRunning {
			return nil, lst, fmt.Sprintf("app %s is %s", a.ID, a.State)
		}
		if n := len(runningExecutors(a)); n != cl.cfg.executors {
			return nil, lst, fmt.Sprintf("app %s has %d/%d executors RUNNING", a.ID, n, cl.cfg.executors)
		}
	}
	return leader, lst, ""
}

// steady waits until steadyProblem finds nothing.
func (cl *cluster) steady(ctx context.Context, timeout time.Duration, withApp bool) (*masterNode, wire.ClusterStatus, error) {
	deadline := time.Now().Add(timeout)
	for {
		leader, st, problem := cl.steadyProblem(ctx, withApp)
		if problem == "" {
			return leader, st, nil
		}
		if time.Now().After(deadline) {
			return nil, st, fmt.Errorf("%s cluster not steady within %s: %s", cl.name, timeout, problem)
		}
		if err := sleepCtx(ctx, 50*time.Millisecond); err != nil {
			return nil, st, err
		}
	}
}

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
	c, err := client.New(cl.urls(), cl.cfg.secret, client.WithLogger(slog.New(slog.NewTextHandler(logf, &slog.HandlerOptions{Level: slog.LevelDebug}))))
	if err != nil {
		logf.Close()
		return err
	}
	n := cl.cfg.executors
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	id, err := c.RegisterApp(rctx, wire.AppDescription{
		Name: "failoverbench-holder", Command: []string{"sleep", "3600"},
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
		parents[w.proc.pid()] = true
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		cl.execs = childrenOf(parents)
		if len(cl.execs) == n {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the workers run %d processes, want %d executors", len(cl.execs), n)
		}
		if err := sleepCtx(ctx, 100*time.Millisecond); err != nil {
			return err
		}
	}
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

// stop ends the app's stream, then stops workers (SIGTERM: they kill their
// executors) and masters, by pid, and checks that no executor is left.
func (cl *cluster) stop() []string {
	var (
		mu    sync.Mutex
		notes []string
	)
	if cl.app != nil {
		cl.app.cancel()
		select {
		case <-cl.app.done:
		case <-time.After(5 * time.Second):
		}
	}
	var wg sync.WaitGroup
	for _, w := range cl.workers {
		if w.proc != nil && !w.proc.exited() {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if !w.proc.stop(15 * time.Second) {
					mu.Lock()
					notes = append(notes, fmt.Sprintf("worker %s did not exit within 15s of SIGTERM; killed", w.id))
					mu.Unlock()
				}
			}()
		}
	}
	wg.Wait()
	for pid, start := range cl.execs {
		if s, ok := procStart(pid); ok && s == start {
			notes = append(notes, fmt.Sprintf("executor process %d outlived its worker; killed", pid))
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
				notes = append(notes, fmt.Sprintf("killing executor process %d: %v", pid, err))
			}
		}
	}
	for _, m := range cl.masters {
		if m.running() {
			m.proc.stop(10 * time.Second)
		}
	}
	return notes
}
