package e2e

// High availability (see ha_failover_test.go): what the masters keep when
// a quorum is lost, when a follower starts from nothing, and when masters
// join and leave.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/berth-cluster/berth/client"
	"github.com/berth-cluster/berth/testkit/testproc"
	"github.com/berth-cluster/berth/wire"
)

// TestHAQuorumLostAndRestored pins what a master without a quorum does: it
// refuses writes with a 503 that says there is no leader, still answers
// reads from its replica (follower view, the records there), and once the
// two dead masters restart on their data a leader is back with the state
// intact (same app and driver ids).
func TestHAQuorumLostAndRestored(t *testing.T) {
	t.Parallel()
	hc := haCluster(t, 3, []string{"--worker-timeout", "10s", "--recovery-timeout", "30s"})
	c := hc.c
	ctx := callCtx(t, time.Minute)
	var apps, drivers []string
	for i := range 2 {
		id := hc.registerLongApp(c, fmt.Sprintf("ha-quorum-%d", i), 1)
		followEvents(t, c, id) // the app's lease, across the outage
		apps = append(apps, id)
	}
	// No worker: the driver waits, SUBMITTED.
	did, err := c.SubmitDriver(ctx, wire.DriverDescription{Command: hc.execCommand(), Cores: 1, MemoryMB: 64})
	if err != nil {
		t.Fatal(err)
	}
	drivers = append(drivers, did)
	slices.Sort(apps)

	leader, st := hc.leader(10 * time.Second)
	epoch := st.Epoch
	rest := hc.others(leader)
	survivor, other := rest[0], rest[1]
	// The survivor has the records before the others go.
	testproc.Eventually(t, 10*time.Second, "the survivor's replica has the apps and the driver", func() error {
		s, err := hc.view(survivor)
		if err != nil {
			return err
		}
		if !containsAll(appIDs(s), apps) || !containsAll(driverIDs(s), drivers) {
			return fmt.Errorf("apps %v drivers %v", appIDs(s), driverIDs(s))
		}
		return nil
	})

	leader.Proc().Kill()
	other.Proc().Kill()
	t.Logf("killed %s (leader) and %s; %s survives", leader.ID, other.ID, survivor.ID)

	// Writes: refused, saying why.
	body := wire.AppDescription{Name: "ha-no-quorum", Command: []string{"true"}}
	var last answer
	testproc.Eventually(t, 15*time.Second, "POST /v1/apps on the survivor refused with 503 no leader", func() error {
		var err error
		if last, err = call(http.MethodPost, survivor.URL+"/v1/apps", secret, jsonOf(t, body)); err != nil {
			return err
		}
		var e wire.Error
		json.Unmarshal([]byte(last.body), &e)
		if last.status != http.StatusServiceUnavailable || !strings.Contains(e.Error, "no leader") || !strings.Contains(e.Error, "quorum") {
			return fmt.Errorf("%d %s", last.status, last.body)
		}
		return nil
	})
	t.Logf("write without a quorum: %d %s", last.status, strings.TrimSpace(last.body))
	// The typed client gives up with that status too, creating nothing.
	short, err := client.New([]string{survivor.URL}, secret, client.WithRetryBudget(time.Second), bin.PKI.ClientOption())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := short.RegisterApp(callCtx(t, 10*time.Second), body); client.StatusCode(err) != http.StatusServiceUnavailable {
		t.Errorf("RegisterApp without a quorum: %v (status %d), want a 503", err, client.StatusCode(err))
	}
	// Reads: answered from the replica.
	s, err := hc.view(survivor)
	if err != nil {
		t.Fatalf("GET /v1/cluster on the survivor without a quorum: %v", err)
	}
	if s.View != wire.ViewFollower || s.MasterID != survivor.ID || s.LeaderID != "" {
		t.Errorf("survivor's view: view %q master %q leader %q, want a follower naming no leader", s.View, s.MasterID, s.LeaderID)
	}
	if !containsAll(appIDs(s), apps) || !containsAll(driverIDs(s), drivers) {
		t.Errorf("survivor's view lists apps %v drivers %v; want %v and %v", appIDs(s), driverIDs(s), apps, drivers)
	}
	if code, b := readyz(survivor.URL); code != http.StatusServiceUnavailable {
		t.Errorf("/readyz on the survivor: %d %s, want 503", code, b)
	}

	// Back to three: a leader again, nothing lost.
	restartedAt := time.Now()
	hc.restart(leader)
	hc.restart(other)
	newLeader, st2 := hc.leader(30 * time.Second)
	t.Logf("after restarting %s and %s: %s ALIVE in %s", leader.ID, other.ID, newLeader.ID, time.Since(restartedAt).Round(time.Millisecond))
	if st2.Epoch <= epoch {
		t.Errorf("epoch %d after the restart, want > %d", st2.Epoch, epoch)
	}
	for _, id := range apps {
		a, ok := appStatus(st2, id)
		if !ok || a.State.Finished() {
			t.Errorf("app %s after the restart: %+v (listed %v), want active", id, a, ok)
		}
	}
	if got := driverIDs(st2); !containsAll(got, drivers) {
		t.Errorf("drivers after the restart %v, want %v", got, drivers)
	}
	for _, d := range st2.ActiveDrivers {
		if d.ID == did && d.State != wire.DriverSubmitted {
			t.Errorf("driver %s: %s, want SUBMITTED", did, d.State)
		}
	}
	// And it takes writes.
	if _, err := c.RegisterApp(callCtx(t, 20*time.Second), wire.AppDescription{Name: "ha-quorum-back", Command: []string{"true"}}); err != nil {
		t.Errorf("registering an app once the quorum is back: %v", err)
	}
}

// TestHAFollowerFromScratchCatchesUp pins catching up: a follower stopped,
// its data deleted, restarted with the same id and ports after ~300 writes
// (and small --raft-snapshot-threshold/--raft-trailing-logs) ends with the
// leader's state in its own follower view.
func TestHAFollowerFromScratchCatchesUp(t *testing.T) {
	t.Parallel()
	hc := haCluster(t, 3, []string{"--raft-snapshot-threshold", "64", "--raft-trailing-logs", "16", "--raft-snapshot-interval", "1s"})
	leader, _ := hc.leader(10 * time.Second)
	follower := hc.others(leader)[0]
	if err := stop(t, follower.Proc(), 15*time.Second); err != nil {
		t.Fatalf("follower's exit after SIGTERM: %v", err)
	}
	entries, _ := os.ReadDir(follower.DataDir)
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(follower.DataDir, e.Name())); err != nil {
			t.Fatal(err)
		}
	}

	writes := haWrites(t, hc.c, 150) // 150 registrations + 150 kills
	t.Logf("%d writes with %s down", writes, follower.ID)

	// The log the follower would need is compacted into a snapshot.
	testproc.Eventually(t, 15*time.Second, "a Raft snapshot on the leader", func() error {
		if haSnapshots(leader.DataDir) == 0 {
			return fmt.Errorf("no snapshot under %s", leader.DataDir)
		}
		return nil
	})
	hc.restart(follower)
	_, lst := hc.leader(10 * time.Second)
	want := appIDs(lst)
	if len(want) < 150 {
		t.Fatalf("the leader lists %d apps, want ≥ 150", len(want))
	}
	testproc.Eventually(t, 20*time.Second, follower.ID+" caught up with the leader's apps", func() error {
		s, err := hc.view(follower)
		if err != nil {
			return err
		}
		if s.View != wire.ViewFollower {
			return fmt.Errorf("view %s", s.View)
		}
		if got := appIDs(s); !slices.Equal(got, want) {
			return fmt.Errorf("%d apps, leader %d", len(got), len(want))
		}
		if s.Epoch != lst.Epoch {
			return fmt.Errorf("epoch %d, leader %d", s.Epoch, lst.Epoch)
		}
		return nil
	})
	// hashicorp/raft logs "Installed remote snapshot" on a follower that
	// catches up from one rather than from the log.
	if logCount(follower.Proc(), `Installed remote snapshot`) == 0 {
		t.Errorf("%s caught up without installing the leader's snapshot", follower.ID)
	}
}

// haWrites registers n apps and kills each: 2n writes through the leader,
// four at a time. It returns the number of writes.
func haWrites(t *testing.T, c *client.Client, n int) int {
	t.Helper()
	ctx := callCtx(t, 2*time.Minute)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	next := make(chan int)
	for range 4 {
		wg.Go(func() {
			for i := range next {
				if _, err := registerAndKill(ctx, c, fmt.Sprintf("ha-write-%d", i)); err != nil {
					errs <- err
				}
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("write: %v", err)
	}
	return 2 * n
}

// registerAndKill registers an app that runs nothing and kills it (two
// writes), and returns its id.
func registerAndKill(ctx context.Context, c *client.Client, name string) (string, error) {
	id, err := c.RegisterApp(ctx, wire.AppDescription{Name: name, Command: []string{"true"}})
	if err != nil {
		return "", fmt.Errorf("registering app %s: %w", name, err)
	}
	if _, err := c.KillApp(ctx, id); err != nil {
		return id, fmt.Errorf("killing app %s: %w", id, err)
	}
	return id, nil
}

// haSnapshots counts the complete Raft snapshots under a master's data
// dir: hashicorp/raft's file store writes each as a directory holding
// meta.json (renamed from *.tmp once complete).
func haSnapshots(dataDir string) int {
	n := 0
	filepath.WalkDir(dataDir, func(path string, d os.DirEntry, err error) error {
		if err == nil && d.Name() == "meta.json" && !strings.HasSuffix(filepath.Dir(path), ".tmp") {
			n++
		}
		return nil
	})
	return n
}
