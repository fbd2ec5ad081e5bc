package e2e

// A test's cluster, started through internal/testcluster, the waits on
// what its leader says, and the app event streams the tests record.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/berth-cluster/berth/client"
	"github.com/berth-cluster/berth/testkit/testcluster"
	"github.com/berth-cluster/berth/testkit/testproc"
	"github.com/berth-cluster/berth/wire"
)

// clusterSpec describes a test's cluster.
type clusterSpec struct {
	// masters is the number of Raft masters, m1..mN on 127.0.0.1..N; 0 is
	// one master, m1, without Raft (its state in bolt, or as flags say).
	masters int
	flags   []string // the masters' flags, after the harness's own
	workers []string // ids of the workers started once a master leads
	cores   int      // each worker's
	memory  string   // each worker's (1g)
	// workerFlags are more flags for every worker.
	workerFlags []string
	// defaultPorts: the workers take their host slots' blocks of the
	// default --port-range, not the harness's ranges.
	defaultPorts bool
	// tenantsReach makes the cluster's directory traversable by others
	// (0711, as --run-as asks of a work directory's parents); what is in
	// it keeps its own modes.
	tenantsReach bool
	// prepare, if set, runs on the cluster's directory before anything
	// starts in it (masters' data dirs are m1..mN in it, workers' work
	// dirs work-ID).
	prepare func(dir string)
}

// cluster is one test's cluster. Its processes are killed by pid when the
// test ends; the executors of its long-running apps (longApp) carry marker.
type cluster struct {
	*testcluster.Cluster
	t      *testing.T
	c      *client.Client // through every master
	marker string
}

// startCluster starts the masters, waits for an ALIVE leader, then starts
// the workers and waits until the leader lists them ALIVE.
func startCluster(t *testing.T, spec clusterSpec) *cluster {
	t.Helper()
	dir := t.TempDir()
	if spec.tenantsReach {
		for _, d := range []string{dir, filepath.Dir(dir)} {
			if err := os.Chmod(d, 0o711); err != nil {
				t.Fatal(err)
			}
		}
	}
	if spec.prepare != nil {
		spec.prepare(dir)
	}
	dumpLogsOnFailure(t, dir)
	// Made first, so that its cleanup runs last: after the workers are
	// killed (their children die with them), it kills by pid any executor
	// of this cluster that is somehow left.
	marker := newMarker(t)
	workers := make([]testcluster.WorkerSpec, len(spec.workers))
	for i, id := range spec.workers {
		workers[i] = workerSpec(id, spec.cores, spec.memory)
		workers[i].Flags = append(workers[i].Flags, spec.workerFlags...)
		workers[i].DefaultPortRange = spec.defaultPorts
	}
	tc, err := testcluster.StartCluster(t, testcluster.Options{
		Bin: bin, Dir: dir, Secret: secret, Masters: max(spec.masters, 1), Standalone: spec.masters == 0,
		MasterFlags: append([]string{"--log-level", "debug"}, spec.flags...), Workers: workers, ListCompleted: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	cl := &cluster{Cluster: tc, t: t, c: newClient(t, tc.URLs()...), marker: marker}
	cl.waitWorkers(20*time.Second, spec.workers...)
	return cl
}

// workerSpec is a worker of the tests: a 2 s kill grace, and debug logs
// for the dumps of a failed test.
func workerSpec(id string, cores int, memory string) testcluster.WorkerSpec {
	return testcluster.WorkerSpec{ID: id, Cores: cores, Memory: memory, KillGrace: 2 * time.Second, Flags: []string{"--log-level", "debug"}}
}

// addWorker starts one more worker (it does not wait for a master to list
// it).
func (cl *cluster) addWorker(id string, cores int, memory string) *testcluster.Worker {
	cl.t.Helper()
	w, err := cl.AddWorker(workerSpec(id, cores, memory))
	if err != nil {
		cl.t.Fatal(err)
	}
	return w
}

// worker returns the worker with the id.
func (cl *cluster) worker(id string) *testcluster.Worker {
	cl.t.Helper()
	return found(cl.t, cl.WorkerByID(id), "worker", id)
}

// master returns the master with the id.
func (cl *cluster) master(id string) *testcluster.Master {
	cl.t.Helper()
	return found(cl.t, cl.ByID(id), "master", id)
}

// found fails the test if a lookup by id of something the test made found
// nothing.
func found[T any](t *testing.T, v *T, kind, id string) *T {
	t.Helper()
	if v == nil {
		t.Fatalf("no %s %q in this cluster", kind, id)
	}
	return v
}

// restart starts m again with the same flags and data.
func (cl *cluster) restart(m *testcluster.Master) {
	cl.t.Helper()
	if err := cl.StartMaster(m); err != nil {
		cl.t.Fatal(err)
	}
}

// others returns the masters but the given ones.
func (cl *cluster) others(not ...*testcluster.Master) []*testcluster.Master {
	var out []*testcluster.Master
	for _, m := range cl.Masters {
		if !slices.Contains(not, m) {
			out = append(out, m)
		}
	}
	return out
}

// newClient returns an API client for the masters.
func newClient(t *testing.T, masters ...string) *client.Client {
	t.Helper()
	c, err := client.New(masters, secret, client.WithRetryBudget(20*time.Second), bin.PKI.ClientOption())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// callCtx is a context for one call, cancelled when the test ends.
func callCtx(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// view is one master's own answer to GET /v1/cluster (a follower answers
// from its replica): these tests must see each master's, where a client
// would follow the leader.
func (cl *cluster) view(m *testcluster.Master) (wire.ClusterStatus, error) {
	return cl.Status(context.Background(), m)
}

// status is the ALIVE leader's view now, for use inside a poll.
func (cl *cluster) status() (wire.ClusterStatus, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, st, err := cl.Leader(ctx)
	return st, err
}

// mustStatus is status for use outside a poll.
func (cl *cluster) mustStatus() wire.ClusterStatus {
	cl.t.Helper()
	st, err := cl.status()
	if err != nil {
		cl.t.Fatal(err)
	}
	return st
}

// leader waits until a master other than the given ones answers as the
// ALIVE leader, and returns it with its view.
func (cl *cluster) leader(timeout time.Duration, not ...*testcluster.Master) (*testcluster.Master, wire.ClusterStatus) {
	cl.t.Helper()
	var lm *testcluster.Master
	var st wire.ClusterStatus
	testproc.Eventually(cl.t, timeout, "an ALIVE leader among "+masterIDs(cl.others(not...)), func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		m, s, err := cl.Leader(ctx)
		if err != nil {
			return err
		}
		if slices.Contains(not, m) {
			return fmt.Errorf("%s still leads", m.ID)
		}
		lm, st = m, s
		return nil
	})
	return lm, st
}

func masterIDs(ms []*testcluster.Master) string {
	var out []string
	for _, m := range ms {
		out = append(out, m.ID)
	}
	return strings.Join(out, ",")
}

// statusWhen waits until cond holds for the ALIVE leader's view, and
// returns the view.
func (cl *cluster) statusWhen(timeout time.Duration, what string, cond func(wire.ClusterStatus) error) wire.ClusterStatus {
	cl.t.Helper()
	var st wire.ClusterStatus
	testproc.Eventually(cl.t, timeout, what, func() error {
		var err error
		if st, err = cl.status(); err != nil {
			return err
		}
		return cond(st)
	})
	return st
}

// waitWorkers waits until the ALIVE leader lists the workers ALIVE (before
// an app registers, so that placement spreads it over all of them).
func (cl *cluster) waitWorkers(timeout time.Duration, ids ...string) wire.ClusterStatus {
	cl.t.Helper()
	return cl.statusWhen(timeout, "workers "+strings.Join(ids, ",")+" ALIVE", func(st wire.ClusterStatus) error {
		for _, id := range ids {
			if w, ok := workerIn(st, id); !ok || w.State != wire.WorkerAlive {
				return fmt.Errorf("%s: %+v (listed %v)", id, w, ok)
			}
		}
		return nil
	})
}

// appWhen waits until the app is in the leader's view and cond holds for
// it.
func (cl *cluster) appWhen(id string, timeout time.Duration, what string, cond func(wire.AppStatus) error) wire.AppStatus {
	cl.t.Helper()
	var a wire.AppStatus
	cl.statusWhen(timeout, what, func(st wire.ClusterStatus) error {
		var ok bool
		if a, ok = appStatus(st, id); !ok {
			return fmt.Errorf("app %s not in the cluster status", id)
		}
		if err := cond(a); err != nil {
			return fmt.Errorf("app %s (%s, executors %s): %w", id, a.State, describeExecs(a), err)
		}
		return nil
	})
	return a
}

// driverWhen waits until cond holds for the driver.
func (cl *cluster) driverWhen(id string, timeout time.Duration, what string, cond func(wire.DriverStatus) error) wire.DriverStatus {
	cl.t.Helper()
	var d wire.DriverStatus
	testproc.Eventually(cl.t, timeout, what, func() error {
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

// appEvents records an app's event stream, followed through client.Events
// (which reconnects by itself, across failovers and restarts) until the
// test ends. The stream is the app's lease.
type appEvents struct {
	mu     sync.Mutex
	events []appEvent
	done   chan struct{}
	err    error // Events' result, once done is closed
}

// appEvent is one event and when the test received it.
type appEvent struct {
	wire.AppEvent
	at time.Time
}

// followEvents follows an app's events with c.
func followEvents(t *testing.T, c *client.Client, appID string) *appEvents {
	ctx, cancel := context.WithCancel(context.Background())
	s := &appEvents{done: make(chan struct{})}
	go func() {
		defer close(s.done)
		err := c.Events(ctx, appID, func(ev wire.AppEvent) error {
			s.mu.Lock()
			s.events = append(s.events, appEvent{ev, time.Now()})
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

// all returns the events received so far.
func (s *appEvents) all() []appEvent {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]appEvent(nil), s.events...)
}

// of returns the events of a type received so far.
func (s *appEvents) of(typ wire.EventType) []appEvent {
	var out []appEvent
	for _, ev := range s.all() {
		if ev.Type == typ {
			out = append(out, ev)
		}
	}
	return out
}

// ended reports whether Events returned, and its error.
func (s *appEvents) ended() (bool, error) {
	select {
	case <-s.done:
		s.mu.Lock()
		defer s.mu.Unlock()
		return true, s.err
	default:
		return false, nil
	}
}

// waitFor waits until cond holds for the events received so far, and
// returns them.
func (s *appEvents) waitFor(t *testing.T, timeout time.Duration, what string, cond func([]appEvent) error) []appEvent {
	t.Helper()
	var evs []appEvent
	testproc.Eventually(t, timeout, what, func() error {
		evs = s.all()
		return cond(evs)
	})
	return evs
}

// types summarises the stream, for failure messages.
func (s *appEvents) types() string { return eventTypes(s.all()) }

func eventTypes(evs []appEvent) string {
	parts := make([]string, len(evs))
	for i, ev := range evs {
		parts[i] = string(ev.Type)
	}
	return strings.Join(parts, ",")
}
