package spark

// A tenant's Spark app is as isolated as any of its apps: on workers with
// --run-as dynamic its executors run under an identity of their own, not
// root; Spark's spark.authenticate secret reaches them through their
// environment only (never their command line, which every user of the
// host reads), and no other tenant can read the app, its logs or its
// description through berth.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/berth-cluster/berth/client"
	"github.com/berth-cluster/berth/testkit/testcluster"
	"github.com/berth-cluster/berth/testkit/testproc"
	"github.com/berth-cluster/berth/wire"
)

// firstDynamicUID is where --run-as dynamic's identities begin.
const firstDynamicUID = 2_000_000_000

// Three executors on two workers of one host, w1 with two cores, w2 with
// one: the app's two executors on w1 run as one identity of w1's, the one
// on w2 as another (each worker has its own range), and the job's shuffle
// crosses the two.
func TestSparkTenantIsolation(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Fatal("--run-as dynamic needs root workers: the tests run as root (CI does)")
	}
	slots(t, 2) // four JVMs
	runAs := []string{"--run-as", "dynamic"}
	cl := startCluster(t, clusterSpec{workers: []testcluster.WorkerSpec{worker("w1", 2, "2g", runAs...), worker("w2", 1, "1g", runAs...)},
		reachable: true})
	const authSecret = "e2e-spark-auth-4a7c19f0d3"
	r := cl.submit(t, "isolated", []string{"spark.authenticate=true", "spark.authenticate.secret=" + authSecret, "spark.executor.instances=3"}, shortJob()...)
	id := r.appID()
	execs := cl.running(t, id, 3, 90*time.Second)
	workerOf := map[int]string{}
	for _, e := range execs {
		workerOf[e.ID] = e.WorkerID
	}

	// The executors' JVMs: not root, one identity for the app on each
	// worker, the secret in their environment only.
	uids := map[string][]uint32{} // by worker
	testproc.Eventually(t, 60*time.Second, "the three executor JVMs", func() error {
		if pids := r.executorPids(); len(pids) < 3 {
			return fmt.Errorf("executor JVMs %v", pids)
		}
		return nil
	})
	for eid, pid := range r.executorPids() {
		var st syscall.Stat_t
		if err := syscall.Stat(fmt.Sprintf("/proc/%d", pid), &st); err != nil {
			t.Fatalf("executor %d (pid %d): %v", eid, pid, err)
		}
		if st.Uid < firstDynamicUID {
			t.Errorf("executor %d runs as uid %d, want a dynamic identity (>= %d), not the worker's", eid, st.Uid, firstDynamicUID)
		}
		uids[workerOf[eid]] = append(uids[workerOf[eid]], st.Uid)
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		environ, _ := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		if bytes.Contains(cmdline, []byte(authSecret)) {
			t.Errorf("executor %d's command line, which every user of the host reads, holds the auth secret", eid)
		}
		if !bytes.Contains(environ, []byte(authSecret)) {
			t.Errorf("executor %d's environment lacks the auth secret: how did it authenticate?", eid)
		}
		if bytes.Contains(environ, []byte(cl.token)) || bytes.Contains(cmdline, []byte(cl.token)) {
			t.Errorf("executor %d was given the tenant's berth token", eid)
		}
	}
	if w1, w2 := uids["w1"], uids["w2"]; len(w1) != 2 || len(w2) != 1 || w1[0] != w1[1] || w1[0] == w2[0] {
		t.Errorf("the executors' uids by worker: %v; want w1's two alike (one identity per app on a worker), w2's its own", uids)
	} else {
		t.Logf("the executors' uids by worker: %v", uids)
	}

	// Another tenant sees nothing of it through berth.
	bob := cl.otherTenant(t, "bob")
	ctx, cancel := callCtx()
	defer cancel()
	if _, err := bob.App(ctx, id); err == nil {
		t.Errorf("tenant bob read acme's app %s", id)
	}
	if rc, err := bob.ExecutorLogs(ctx, id, execs[0].ID, client.Stderr, 4096); err == nil {
		rc.Close()
		t.Errorf("tenant bob read acme's executor log")
	}
	view, err := bob.Cluster(ctx)
	if err != nil {
		t.Fatal(err)
	}
	seen, _ := json.Marshal(view)
	if strings.Contains(string(seen), id) || strings.Contains(string(seen), authSecret) {
		t.Errorf("tenant bob's view of the cluster shows acme's app or its secret: %.300s", seen)
	}
	r.wait(3*time.Minute, shortJobOK)
	a := cl.finished(t, id)
	agree(t, r.log(), a)

	// Nor does the audit log, which operators read, echo the secret.
	actx, acancel := callCtx()
	defer acancel()
	audit, err := cl.c.Audit(actx, time.Hour, "")
	if err != nil {
		t.Fatal(err)
	}
	if all, _ := json.Marshal(audit); strings.Contains(string(all), authSecret) {
		t.Errorf("the audit log holds the app's auth secret")
	}
}

// otherTenant creates a tenant of queue etl and returns its client.
func (cl *sparkCluster) otherTenant(t *testing.T, name string) *client.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	created, err := cl.c.CreateTenant(ctx, name, wire.TenantSpec{Queues: []string{"etl"}})
	if err != nil {
		t.Fatalf("tenant %s: %v", name, err)
	}
	c, err := client.New(cl.URLs(), "", client.WithToken(created.Token), client.WithRetryBudget(10*time.Second), bin.PKI.ClientOption())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// reachableDir lets the tenants' identities traverse dir and its parent
// (a worker with --run-as refuses a work directory they cannot reach).
func reachableDir(t *testing.T, dir string) {
	t.Helper()
	for _, d := range []string{dir, filepath.Dir(dir)} {
		if err := os.Chmod(d, 0o711); err != nil {
			t.Fatal(err)
		}
	}
}
