package e2e

// Helpers of the daemon, bad-input and pi tests. Package-level names start
// with d so that they cannot collide with other files of the package.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/berth-cluster/berth/client"
	"github.com/berth-cluster/berth/wire"
)

// dWorkerTimeout is the --worker-timeout of the daemon tests' masters: short,
// so that a lost worker is noticed within seconds.
const dWorkerTimeout = 2 * time.Second

var dMarkerSeq atomic.Int64

// dMarker returns a string unique to this test run that is also a valid
// duration for sleep(1), which adds up its arguments: ["sleep", "600",
// marker] sleeps 600 s and carries the marker in its command line, so that
// pidsOf finds exactly the processes of one test. A cleanup kills, by pid,
// whatever still carries the marker when the test ends (the processes the
// test had berth start).
func dMarker(t *testing.T) string {
	t.Helper()
	m := fmt.Sprintf("0.%d%04d%06d", os.Getpid()%100000, dMarkerSeq.Add(1), time.Now().UnixNano()%1000000)
	t.Cleanup(func() {
		for _, pid := range pidsOf(m) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	return m
}

// dSleep is the argv of a long-running, harmless process carrying marker.
func dSleep(marker string) []string { return []string{"sleep", "600", marker} }

// dCwd returns the working directory of a process ("" if it is gone).
func dCwd(pid int) string {
	dir, _ := os.Readlink(filepath.Join("/proc", strconv.Itoa(pid), "cwd"))
	return dir
}

// dPidsUnder returns the pids carrying marker whose working directory is
// under dir: a worker starts each child in its own directory under its
// --work-dir, so this tells which worker runs a process.
func dPidsUnder(marker, dir string) []int {
	var out []int
	for _, pid := range pidsOf(marker) {
		if cwd := dCwd(pid); cwd == dir || strings.HasPrefix(cwd, dir+string(filepath.Separator)) {
			out = append(out, pid)
		}
	}
	return out
}

// dSamePids reports whether two pid lists hold the same pids.
func dSamePids(a, b []int) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// dCluster is one master and its workers, by worker id.
type dCluster struct {
	m       *masterProc
	c       *client.Client
	workers map[string]*workerProc
}

// dStartCluster starts a master with extra flags (plus a short worker
// timeout unless given) and one worker per id, each with cores cores, and
// waits until all of them are ALIVE.
func dStartCluster(t *testing.T, masterExtra []string, cores int, ids ...string) *dCluster {
	t.Helper()
	if !slices.Contains(masterExtra, "--worker-timeout") {
		masterExtra = append([]string{"--worker-timeout", dWorkerTimeout.String()}, masterExtra...)
	}
	m := startMaster(t, masterOpts{extra: masterExtra})
	cl := &dCluster{m: m, c: newClient(t, m.url), workers: map[string]*workerProc{}}
	for _, id := range ids {
		cl.addWorker(t, id, cores)
	}
	aliveWorkers(t, cl.c, len(ids), 20*time.Second)
	return cl
}

// addWorker starts a worker with a fixed id (it does not wait for it).
func (cl *dCluster) addWorker(t *testing.T, id string, cores int) *workerProc {
	t.Helper()
	w := startWorker(t, []string{cl.m.url}, cores, "4g", "--id", id)
	cl.workers[id] = w
	return w
}

// status returns the leader's cluster status, for use inside eventually.
func (cl *dCluster) status(t *testing.T) (wire.ClusterStatus, error) {
	st, err := cluster(t, cl.c)
	if err == nil && (st.View != wire.ViewLeader || st.Status != wire.MasterAlive) {
		err = fmt.Errorf("master is %s (%s), not the ALIVE leader", st.Status, st.View)
	}
	return st, err
}

// mustStatus is status for use outside eventually.
func (cl *dCluster) mustStatus(t *testing.T) wire.ClusterStatus {
	t.Helper()
	st, err := cl.status(t)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// app waits until the app is in the status and cond holds for it.
func (cl *dCluster) app(t *testing.T, id string, timeout time.Duration, what string, cond func(wire.AppStatus) error) wire.AppStatus {
	t.Helper()
	var a wire.AppStatus
	eventually(t, timeout, what, func() error {
		st, err := cl.status(t)
		if err != nil {
			return err
		}
		var ok bool
		if a, ok = appStatus(st, id); !ok {
			return fmt.Errorf("app %s not in the cluster status", id)
		}
		if err := cond(a); err != nil {
			return fmt.Errorf("app %s (%s, executors %s): %w", id, a.State, dExecs(a), err)
		}
		return nil
	})
	return a
}

// driver waits until cond holds for the driver.
func (cl *dCluster) driver(t *testing.T, id string, timeout time.Duration, what string, cond func(wire.DriverStatus) error) wire.DriverStatus {
	t.Helper()
	var d wire.DriverStatus
	eventually(t, timeout, what, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		var err error
		if d, err = cl.c.Driver(ctx, id); err != nil {
			return err
		}
		if err := cond(d); err != nil {
			return fmt.Errorf("driver %s (%s on %q, %q): %w", id, d.State, d.WorkerID, d.Message, err)
		}
		return nil
	})
	return d
}

// dWorker finds a worker in a status.
func dWorker(st wire.ClusterStatus, id string) (wire.WorkerStatus, bool) {
	for _, w := range st.Workers {
		if w.ID == id {
			return w, true
		}
	}
	return wire.WorkerStatus{}, false
}

// dLive returns an app's executors that are LAUNCHING or RUNNING.
func dLive(a wire.AppStatus) []wire.ExecutorStatus {
	var out []wire.ExecutorStatus
	for _, e := range a.Executors {
		if !e.State.Finished() {
			out = append(out, e)
		}
	}
	return out
}

// dExecs describes executors for failure messages: id@worker:cores/STATE.
func dExecs(a wire.AppStatus) string {
	parts := make([]string, 0, len(a.Executors))
	for _, e := range a.Executors {
		parts = append(parts, fmt.Sprintf("%d@%s:%d/%s", e.ID, e.WorkerID, e.Cores, e.State))
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// dEventLog follows an app's event stream (client.Events, which reconnects
// by itself) in a goroutine and records every event.
type dEventLog struct {
	mu   sync.Mutex
	evs  []wire.AppEvent
	done chan struct{}
	err  error // Events' result, once done is closed
}

func dFollow(t *testing.T, c *client.Client, appID string) *dEventLog {
	ctx, cancel := context.WithCancel(context.Background())
	l := &dEventLog{done: make(chan struct{})}
	go func() {
		defer close(l.done)
		l.err = c.Events(ctx, appID, func(ev wire.AppEvent) error {
			l.mu.Lock()
			l.evs = append(l.evs, ev)
			l.mu.Unlock()
			return nil
		})
	}()
	t.Cleanup(func() {
		cancel()
		<-l.done
	})
	return l
}

func (l *dEventLog) all() []wire.AppEvent {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.evs)
}

// waitFor waits until cond holds for the events received so far.
func (l *dEventLog) waitFor(t *testing.T, timeout time.Duration, what string, cond func([]wire.AppEvent) error) []wire.AppEvent {
	t.Helper()
	var evs []wire.AppEvent
	eventually(t, timeout, what, func() error {
		evs = l.all()
		return cond(evs)
	})
	return evs
}

func dEventTypes(evs []wire.AppEvent) string {
	var parts []string
	for _, ev := range evs {
		parts = append(parts, string(ev.Type))
	}
	return strings.Join(parts, ",")
}

// dStable checks that cond keeps holding for d (a negative observation:
// something must NOT happen during the window).
func dStable(t *testing.T, d time.Duration, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if err := cond(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// dResp is a raw HTTP answer.
type dResp struct {
	status int
	header http.Header
	body   string
}

// dRaw sends a raw request (any body, any secret; "" sends none) and returns
// the answer.
func dRaw(method, url, secret string, body []byte) (dResp, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(string(body)))
	if err != nil {
		return dResp{}, err
	}
	if secret != "" {
		req.Header.Set("Authorization", "Bearer "+secret)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := httpDefault.Do(req)
	if err != nil {
		return dResp{}, err
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return dResp{status: resp.StatusCode, header: resp.Header, body: string(data)}, nil
}

// dJSON marshals v or fails the test.
func dJSON(t *testing.T, v any) []byte {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// dWorkerState is GET /v1/state of a worker's API.
func dWorkerState(t *testing.T, addr string) (wire.WorkerLatestState, error) {
	var st wire.WorkerLatestState
	r, err := dRaw(http.MethodGet, addr+"/v1/state", secret, nil)
	if err != nil {
		return st, err
	}
	if r.status != http.StatusOK {
		return st, fmt.Errorf("GET %s/v1/state: %d %s", addr, r.status, r.body)
	}
	return st, json.Unmarshal([]byte(r.body), &st)
}

// dCtx is a context for one call, cancelled when the test ends.
func dCtx(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// dReadAll reads a log stream through the client.
func dReadAll(rc io.ReadCloser, err error) (string, error) {
	if err != nil {
		return "", err
	}
	defer rc.Close()
	data, err := io.ReadAll(rc)
	return string(data), err
}
