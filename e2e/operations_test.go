package e2e

// Operations (docs/OPERATIONS.md, docs/HA.md): an operator's snapshot,
// saved under load and restored into a fresh cluster; and the recovery of a
// cluster that lost two of its three masters for good.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/berth-cluster/berth/client"
	"github.com/berth-cluster/berth/testkit/testproc"
	"github.com/berth-cluster/berth/wire"
)

// ack is one write the workload had acknowledged, and when.
type ack struct {
	kind, id string // "app" (registered and killed) or "queue"
	at       time.Time
}

// workload writes through c from n goroutines until stop is called: apps
// registered and killed, and queues put. Every acknowledged write is kept
// with the time its answer came.
type workload struct {
	mu   sync.Mutex
	acks []ack
	stop context.CancelFunc
	wg   sync.WaitGroup
}

func startWorkload(c *client.Client, prefix string, n int) *workload {
	ctx, cancel := context.WithCancel(context.Background())
	w := &workload{stop: cancel}
	for g := range n {
		w.wg.Go(func() {
			for i := 0; ctx.Err() == nil; i++ {
				wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
				var a ack
				var err error
				if i%2 == 0 {
					a.kind = "app"
					a.id, err = registerAndKill(wctx, c, fmt.Sprintf("%s-%d-%d", prefix, g, i))
				} else {
					a.kind, a.id = "queue", fmt.Sprintf("%s-%d-%d", prefix, g, i)
					_, err = c.PutQueue(wctx, a.id, wire.QueueSpec{})
				}
				wcancel()
				if err == nil {
					a.at = time.Now()
					w.mu.Lock()
					w.acks = append(w.acks, a)
					w.mu.Unlock()
				}
			}
		})
	}
	return w
}

// end stops the workload and returns what it had acknowledged.
func (w *workload) end() []ack {
	w.stop()
	w.wg.Wait()
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.acks)
}

func acksBefore(acks []ack, t time.Time) []ack {
	var out []ack
	for _, a := range acks {
		if a.at.Before(t) {
			out = append(out, a)
		}
	}
	return out
}

// missing returns the acknowledged writes the cluster behind c does not
// hold: an app it does not list, a queue it does not have.
func missing(ctx context.Context, c *client.Client, acks []ack) ([]string, error) {
	qs, err := c.Queues(ctx)
	if err != nil {
		return nil, err
	}
	queues := map[string]bool{}
	for _, q := range qs.Queues {
		queues[q.Name] = true
	}
	var out []string
	for _, a := range acks {
		switch a.kind {
		case "queue":
			if !queues[a.id] {
				out = append(out, "queue "+a.id)
			}
		case "app":
			if st, err := c.App(ctx, a.id); err != nil || st.State != wire.AppKilled {
				out = append(out, fmt.Sprintf("app %s (%s, %v)", a.id, st.State, err))
			}
		}
	}
	return out, nil
}

// A snapshot saved from a cluster under a concurrent workload, restored
// into a fresh cluster: every write acknowledged before the save is there,
// the cluster serves at once, and the fresh cluster's worker is told to
// kill the executor it runs that the restored state does not know. A
// truncated file and a restore without --force change nothing.
func TestOperatorSnapshotRestoreIntoAFreshCluster(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "backup.snap")
	a := haCluster(t, 3, nil, "wa1")
	runID, _, _ := a.runLongApp("before-save", 1)

	load := startWorkload(a.c, "snap", 3)
	time.Sleep(time.Second)
	saveStart := time.Now()
	out, err := a.berthCLI("operator", "snapshot", "save", file)
	if err != nil {
		load.end()
		t.Fatalf("snapshot save: %v\n%s", err, out)
	}
	t.Logf("berth operator snapshot save: %s", strings.TrimSpace(out))
	time.Sleep(500 * time.Millisecond) // the workload goes on after the save
	acks := load.end()
	before := acksBefore(acks, saveStart)
	if len(before) < 5 {
		t.Fatalf("only %d writes acknowledged before the save (of %d)", len(before), len(acks))
	}
	t.Logf("%d writes acknowledged before the save, %d in all", len(before), len(acks))
	out, err = a.berthCLI("operator", "snapshot", "inspect", file)
	if err != nil || !strings.Contains(out, "(checked)") || !regexp.MustCompile(`apps:\s+\d+ active`).MatchString(out) {
		t.Errorf("snapshot inspect: %v\n%s", err, out)
	}

	// The cluster is lost, masters and worker.
	for _, m := range a.Masters {
		m.Proc().Kill()
	}
	for _, w := range a.Workers {
		w.Kill()
	}

	// A fresh cluster, with an app of its own running on its worker.
	b := startCluster(t, clusterSpec{masters: 3, flags: []string{"--recovery-timeout", "5s"}, workers: []string{"wb1"}, cores: 2, memory: "1g"})
	zID, _, _ := b.runLongApp("after-save", 1)
	zKey := execKey(zID, 0)
	if b.execPids()[zKey] == 0 {
		t.Fatalf("no process for %s: %v", zKey, b.execPids())
	}
	ctx := callCtx(t, 2*time.Minute)

	// A truncated file: refused, nothing changes.
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	truncated := file + ".truncated"
	os.WriteFile(truncated, data[:len(data)/2], 0o600)
	out, err = b.berthCLI("operator", "snapshot", "restore", "--force", truncated)
	if err == nil || !strings.Contains(out, "snapshot truncated") {
		t.Errorf("restore of a truncated file: %v\n%s", err, out)
	}
	// Without --force: what would be killed, and nothing changes.
	out, err = b.berthCLI("operator", "snapshot", "restore", file)
	if err == nil || !strings.Contains(out, "not restored") || !strings.Contains(out, zID) || !strings.Contains(out, "wb1") {
		t.Errorf("restore without --force: %v\n%s", err, out)
	}
	if st, err := b.c.App(ctx, zID); err != nil || st.State != wire.AppRunning {
		t.Fatalf("the fresh cluster's app after the refusals: %s %v", st.State, err)
	}

	out, err = b.berthCLI("operator", "snapshot", "restore", "--force", file)
	restored := time.Now()
	if err != nil || !strings.Contains(out, "Restored the snapshot") {
		t.Fatalf("restore --force: %v\n%s", err, out)
	}
	t.Logf("berth operator snapshot restore --force:\n%s", out)

	// It serves at once: the first read after the restore answers.
	var lacking []string
	testproc.Eventually(t, 20*time.Second, "every write acknowledged before the save in the restored cluster", func() error {
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		var err error
		if lacking, err = missing(rctx, b.c, before); err != nil {
			return err
		}
		if len(lacking) > 0 {
			return fmt.Errorf("missing %d: %v", len(lacking), lacking[:min(len(lacking), 5)])
		}
		return nil
	})
	if took := time.Since(restored); took > 5*time.Second {
		t.Errorf("the restored cluster answered with every write after %s, want at once", took)
	}
	if _, err := b.c.App(ctx, runID); err != nil {
		t.Errorf("the app that ran at the save: %v", err)
	}
	if _, err := b.c.App(ctx, zID); client.StatusCode(err) != http.StatusNotFound {
		t.Errorf("the fresh cluster's own app after the restore: %v, want 404", err)
	}
	// Its executor, unknown to the restored state, is killed by its worker.
	testproc.Eventually(t, 30*time.Second, "the executor unknown to the restored state killed", func() error {
		if pid := b.execPids()[zKey]; pid != 0 {
			return fmt.Errorf("%s still runs as pid %d", zKey, pid)
		}
		return nil
	})
	if lines := b.worker("wb1").LogMatches(regexp.MustCompile(`master is killing what it does not know`)); len(lines) == 0 {
		t.Error("the worker's log does not say the master had it kill what it did not know")
	}
	// The masters are the fresh cluster's, and it takes writes.
	st := b.statusWhen(30*time.Second, "an ALIVE leader over the restored state", func(st wire.ClusterStatus) error {
		if len(st.Masters) != 3 {
			return fmt.Errorf("masters %+v", st.Masters)
		}
		return nil
	})
	for _, m := range st.Masters {
		if b.ByID(m.ID) == nil || m.APIAddr != b.ByID(m.ID).URL {
			t.Errorf("master %+v is not the fresh cluster's", m)
		}
	}
	mustRegisterAndKill(t, b.c, "after-restore")
}

// Two of three masters killed under load with their data deleted: the
// third, recovered with --recover, leads alone with all it held; two
// masters with empty data directories join it; the state is on all three,
// the executor that ran throughout still runs, and the cluster survives
// losing a master again.
func TestOperatorLostQuorumRecoverAndRejoin(t *testing.T) {
	t.Parallel()
	// Every completed app is kept: the first round's must outlive the
	// second round's (at the default 200 retained, a fast machine's load
	// pushed them out, and the check took that for a loss).
	hc := haCluster(t, 3, []string{"--recovery-timeout", "10s", "--retained-apps", "100000", "--retained-drivers", "100000"}, "w1")
	runID, _, st := hc.runLongApp("through-recovery", 1)
	key := execKey(runID, executorsOf(t, st, runID)[0])
	pid := hc.execPids()[key]

	// A first round of writes, on every master before the kills.
	first := startWorkload(hc.c, "q1", 2)
	time.Sleep(time.Second)
	quiet := first.end()
	leader, _ := hc.leader(10 * time.Second)
	rest := hc.others(leader)
	survivor, other := rest[0], rest[1]
	sc := newClient(t, survivor.URL)
	testproc.Eventually(t, 10*time.Second, "the survivor's replica has the first round", func() error {
		v, err := hc.view(survivor)
		if err != nil {
			return err
		}
		for _, a := range quiet {
			if a.kind == "app" && !slices.Contains(appIDs(v), a.id) {
				return fmt.Errorf("app %s missing", a.id)
			}
		}
		return nil
	})

	// Under load: the leader and the other follower die, and their data.
	second := startWorkload(hc.c, "q2", 2)
	time.Sleep(500 * time.Millisecond)
	leader.Proc().Kill()
	other.Proc().Kill()
	killed := time.Now()
	t.Logf("killed %s (leader) and %s with -9; %s survives", leader.ID, other.ID, survivor.ID)
	for _, m := range []string{leader.DataDir, other.DataDir} {
		if err := os.RemoveAll(m); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(time.Second)
	acks := second.end()
	// What the survivor holds now is what the recovery must keep.
	held, err := hc.view(survivor)
	if err != nil {
		t.Fatal(err)
	}
	heldApps := appIDs(held)
	t.Logf("the survivor holds %d apps; %d writes acknowledged under load, %d before the kills", len(heldApps), len(acks), len(acksBefore(acks, killed)))

	if err := survivor.Proc().Stop(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	out, err := hc.RecoverMaster(survivor)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("master --recover:\n%s", out)
	if !strings.Contains(out, "master "+survivor.ID+" alone") {
		t.Errorf("--recover said %q", out)
	}
	recoveredAt := time.Now()
	hc.restart(survivor)
	lm, _ := hc.leader(30 * time.Second)
	if lm != survivor {
		t.Fatalf("%s leads, want the survivor %s", lm.ID, survivor.ID)
	}
	t.Logf("the recovered %s ALIVE %s after its restart", survivor.ID, time.Since(recoveredAt).Round(time.Millisecond))
	ctx := callCtx(t, 2*time.Minute)
	check := func(c *client.Client, who string) {
		t.Helper()
		testproc.Eventually(t, 20*time.Second, who+" holds what the survivor held", func() error {
			v, err := c.Cluster(ctx)
			if err != nil {
				return err
			}
			if got := appIDs(v); !containsAll(got, heldApps) {
				return fmt.Errorf("apps: %d of %d", len(got), len(heldApps))
			}
			lacking, err := missing(ctx, c, quiet)
			if err != nil {
				return err
			}
			if len(lacking) > 0 {
				return fmt.Errorf("missing %v", lacking)
			}
			return nil
		})
	}
	check(sc, "the recovered master")

	// Two masters with empty data directories join it.
	for _, m := range []string{leader.ID, other.ID} {
		if err := hc.Rejoin(hc.master(m), survivor); err != nil {
			t.Fatal(err)
		}
	}
	hc.statusWhen(30*time.Second, "three voters again, each with its version", func(st wire.ClusterStatus) error {
		voters := 0
		for _, n := range st.Masters {
			if n.Voter && n.Version != "" && n.Version == st.Version {
				voters++
			}
		}
		if voters != 3 {
			return fmt.Errorf("masters %+v (version %q)", st.Masters, st.Version)
		}
		return nil
	})
	out, err = hc.berthCLI("operator", "raft", "list-peers", "--json")
	var peers wire.RaftPeers
	if err != nil || json.Unmarshal([]byte(out), &peers) != nil || len(peers.Peers) != 3 {
		t.Fatalf("list-peers: %v\n%s", err, out)
	}
	for _, p := range peers.Peers {
		if !p.Reachable || !p.Voter || p.Version == "" || p.Leader != (p.ID == survivor.ID) {
			t.Errorf("peer %+v", p)
		}
	}
	if out, err := hc.berthCLI("operator", "raft", "remove-peer", survivor.ID); err == nil || !strings.Contains(out, "is the leader") {
		t.Errorf("remove-peer of the leader: %v\n%s", err, out)
	}
	if out, err := hc.berthCLI("operator", "raft", "remove-peer", "m9"); err == nil || !strings.Contains(out, "no master \"m9\"") {
		t.Errorf("remove-peer of an unknown master: %v\n%s", err, out)
	}
	for _, m := range []string{leader.ID, other.ID} {
		mm := hc.master(m)
		testproc.Eventually(t, 20*time.Second, m+"'s replica holds what the survivor held", func() error {
			v, err := hc.view(mm)
			if err != nil {
				return err
			}
			if got := appIDs(v); !containsAll(got, heldApps) {
				return fmt.Errorf("apps: %d of %d (view %s)", len(got), len(heldApps), v.View)
			}
			return nil
		})
	}
	// The executor ran throughout.
	if got := hc.execPids()[key]; got != pid {
		t.Errorf("%s: pid %d after the recovery, was %d", key, got, pid)
	}
	// Three masters again: losing one is survived.
	mustRegisterAndKill(t, hc.c, "after-rejoin")
	survivor.Proc().Kill()
	nl, _ := hc.leader(30*time.Second, survivor)
	t.Logf("with %s killed again, %s leads", survivor.ID, nl.ID)
	check(newClient(t, nl.URL), "the new leader "+nl.ID)
	// Gone for good: removed, two voters remain, and they take writes.
	if out, err := hc.berthCLI("operator", "raft", "remove-peer", survivor.ID); err != nil || !strings.Contains(out, "removed master "+survivor.ID) {
		t.Fatalf("remove-peer %s: %v\n%s", survivor.ID, err, out)
	}
	st = hc.statusWhen(20*time.Second, "two masters", func(st wire.ClusterStatus) error {
		if len(st.Masters) != 2 {
			return fmt.Errorf("masters %+v", st.Masters)
		}
		return nil
	})
	mustRegisterAndKill(t, hc.c, "after-remove")
}

// executorsOf is the ids of an app's executors in a view.
func executorsOf(t *testing.T, st wire.ClusterStatus, appID string) []int {
	t.Helper()
	a, ok := appStatus(st, appID)
	if !ok || len(a.Executors) == 0 {
		t.Fatalf("app %s: %+v", appID, a)
	}
	var out []int
	for _, e := range a.Executors {
		out = append(out, e.ID)
	}
	return out
}
