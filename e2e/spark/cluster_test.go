package spark

// A test's berth cluster: three TLS masters (Raft) on 127.0.0.1-3, workers,
// the queues and the tenant the Spark apps run as, and the operator's view
// of what berth records.

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/berth-cluster/berth/client"
	"github.com/berth-cluster/berth/testkit/testcluster"
	"github.com/berth-cluster/berth/testkit/testproc"
	"github.com/berth-cluster/berth/wire"
)

// clusterSpec describes a test's cluster. Its tenant "acme" may use every
// queue given (and "etl", the queue the apps run in unless told).
type clusterSpec struct {
	workers []testcluster.WorkerSpec
	flags   []string // the masters' flags, after the harness's and masterFlags
	queues  map[string]wire.QueueSpec
	// reachable: the tenants' identities may traverse the cluster's
	// directory (workers with --run-as dynamic).
	reachable bool
}

// masterFlags: a lost worker is noticed within seconds (an app's client
// gone too: --app-timeout defaults to it).
var masterFlags = []string{"--worker-timeout", "5s"}

// worker is a worker of the tests: a 2 s kill grace (a JVM's shutdown).
func worker(id string, cores int, memory string, flags ...string) testcluster.WorkerSpec {
	return testcluster.WorkerSpec{ID: id, Cores: cores, Memory: memory, KillGrace: 2 * time.Second, Flags: flags}
}

// sparkCluster is a running cluster and the tenant the apps run as.
type sparkCluster struct {
	*testcluster.Cluster
	dir   string
	c     *client.Client // the operator's
	token string         // tenant acme's
}

// startCluster starts a cluster for one test; its processes are killed
// when the test ends, and their logs' ends are in the test's log if it
// failed.
func startCluster(t *testing.T, spec clusterSpec) *sparkCluster {
	t.Helper()
	dir := t.TempDir()
	if spec.reachable {
		reachableDir(t, dir)
	}
	dumpLogsOnFailure(t, dir)
	cl, err := newCluster(t, dir, spec)
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

func newCluster(h testcluster.Host, dir string, spec clusterSpec) (*sparkCluster, error) {
	tc, err := testcluster.StartCluster(h, testcluster.Options{
		Bin: bin, Dir: dir, Secret: secret, Masters: 3, Workers: spec.workers, ListCompleted: true,
		MasterFlags: append(append([]string{}, masterFlags...), spec.flags...),
	})
	if err != nil {
		return nil, err
	}
	c, err := client.New(tc.URLs(), secret, client.WithRetryBudget(20*time.Second), bin.PKI.ClientOption())
	if err != nil {
		return nil, err
	}
	cl := &sparkCluster{Cluster: tc, dir: dir, c: c}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	queues := []string{"etl"}
	if _, err := c.PutQueue(ctx, "etl", wire.QueueSpec{}); err != nil {
		return nil, fmt.Errorf("queue etl: %w", err)
	}
	for name, q := range spec.queues {
		if _, err := c.PutQueue(ctx, name, q); err != nil {
			return nil, fmt.Errorf("queue %s: %w", name, err)
		}
		queues = append(queues, name)
	}
	created, err := c.CreateTenant(ctx, "acme", wire.TenantSpec{Queues: queues})
	if err != nil {
		return nil, fmt.Errorf("tenant acme: %w", err)
	}
	cl.token = created.Token
	return cl, cl.waitWorkers(ctx, spec.workers)
}

// waitWorkers waits until the leader lists every worker ALIVE, so that an
// app's first executors spread over all of them.
func (cl *sparkCluster) waitWorkers(ctx context.Context, ws []testcluster.WorkerSpec) error {
	for {
		st, err := cl.c.LeaderCluster(ctx)
		alive := 0
		for _, w := range st.Workers {
			if w.State == wire.WorkerAlive {
				alive++
			}
		}
		if err == nil && alive == len(ws) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("workers ALIVE: %d of %d (%v)", alive, len(ws), err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// sparkMaster is Spark's master URL for the cluster: every master.
func (cl *sparkCluster) sparkMaster() string {
	var hosts []string
	for _, m := range cl.Masters {
		u, _ := url.Parse(m.URL)
		hosts = append(hosts, u.Host)
	}
	return "spark+berth://" + strings.Join(hosts, ",")
}

// leaderURL is the API (and UI) address of the master that leads now.
func (cl *sparkCluster) leaderURL(t *testing.T) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	m, _, err := cl.WaitLeader(ctx)
	if err != nil {
		t.Fatalf("no leader: %v", err)
	}
	return m.URL
}

// app is the app's status as berth's leader has it now.
func (cl *sparkCluster) app(t *testing.T, id string) wire.AppStatus {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	a, err := cl.c.App(ctx, id)
	if err != nil {
		t.Fatalf("GET /v1/apps/%s: %v", id, err)
	}
	return a
}

// appWhen waits until cond holds for the app's status, and returns it.
func (cl *sparkCluster) appWhen(t *testing.T, id string, within time.Duration, what string, cond func(wire.AppStatus) error) wire.AppStatus {
	t.Helper()
	var a wire.AppStatus
	testproc.Eventually(t, within, what, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		var err error
		if a, err = cl.c.App(ctx, id); err != nil {
			return err
		}
		if err := cond(a); err != nil {
			return fmt.Errorf("app %s %s, executors %s: %w", id, a.State, describe(a), err)
		}
		return nil
	})
	return a
}

// running waits until the app has n RUNNING executors, and returns them.
func (cl *sparkCluster) running(t *testing.T, id string, n int, within time.Duration) []wire.ExecutorStatus {
	t.Helper()
	a := cl.appWhen(t, id, within, fmt.Sprintf("%d executors RUNNING", n), func(a wire.AppStatus) error {
		if got := len(inState(a, wire.ExecutorRunning)); got != n {
			return fmt.Errorf("%d RUNNING", got)
		}
		return nil
	})
	return inState(a, wire.ExecutorRunning)
}

// berthCLI runs bin/berth against the masters, as the tenant (token) or
// the operator (""), and returns its output.
func (cl *sparkCluster) berthCLI(token string, args ...string) (string, error) {
	cred := []string{"--secret", secret}
	if token != "" {
		cred = []string{"--token", token}
	}
	full := append(append([]string{"--master", strings.Join(cl.URLs(), ","), "--tls-ca-file", bin.PKI.CAFile()}, cred...), args...)
	cmd := exec.Command(bin.Berth, full...)
	cmd.Env = append(os.Environ(), wire.EnvSecret+"=", "BERTH_TOKEN=")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// inState returns the app's executors in a state.
func inState(a wire.AppStatus, state wire.ExecutorState) []wire.ExecutorStatus {
	var out []wire.ExecutorStatus
	for _, e := range a.Executors {
		if e.State == state {
			out = append(out, e)
		}
	}
	return out
}

// describe describes an app's executors for failure messages:
// id@worker/STATE[cause].
func describe(a wire.AppStatus) string {
	parts := make([]string, 0, len(a.Executors))
	for _, e := range a.Executors {
		s := fmt.Sprintf("%d@%s/%s", e.ID, e.WorkerID, e.State)
		if e.Cause != "" {
			s += "[" + string(e.Cause) + "]"
		}
		parts = append(parts, s)
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// dumpLogsOnFailure has the end of every log under dir written into the
// test's log if the test fails. Registered before the processes start, it
// runs after their kills: the logs are complete.
func dumpLogsOnFailure(t *testing.T, dir string) {
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		logs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
		for _, path := range logs {
			data, _ := os.ReadFile(path)
			if len(data) > 5000 {
				data = data[len(data)-5000:]
			}
			t.Logf("---- %s ----\n%s", filepath.Base(path), data)
		}
	})
}

// The cluster the tests that disturb only their own apps share: two
// workers of 2 cores, room for two apps of two 512m executors at once, and
// two GPUs each. Started by the first test that asks, stopped by TestMain.
var (
	sharedOnce    sync.Once
	sharedCluster *sparkCluster
	sharedErr     error
	sharedHost    = &testcluster.CommandHost{Log: os.Stderr}
)

func shared(t *testing.T) *sparkCluster {
	t.Helper()
	sharedOnce.Do(func() {
		dir, err := os.MkdirTemp("", "berth-e2e-spark-shared-")
		if err != nil {
			sharedErr = err
			return
		}
		sharedHost.Cleanup(func() { os.RemoveAll(dir) })
		sharedCluster, sharedErr = newCluster(sharedHost, dir, clusterSpec{workers: []testcluster.WorkerSpec{
			worker("w1", 2, "2g", "--resource", "gpu=2"), worker("w2", 2, "2g", "--resource", "gpu=2"),
		}})
	})
	if sharedErr != nil {
		t.Fatalf("the shared cluster: %v", sharedErr)
	}
	dumpLogsOnFailure(t, sharedCluster.dir)
	return sharedCluster
}

func stopShared() { sharedHost.Close() }
