package e2e

// What one tenant could do to every master through the audit log, end to
// end (issue 30): 200 refused requests naming a megabyte each.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/berth-cluster/berth/wire"
)

// TestATenantsRefusalFloodStaysSmall: a tenant sends 200 DELETE
// /v1/queues/<1 MB> (an operator's route: each refused 403 and audited).
// Before, every master stored each target whole (50 MB → 500 MB RSS, 200
// MB more data each, a 203 MB GET /v1/audit). Now each answer is small,
// the log records a ration of the refusals with their targets cut, and
// says how many it did not record, so that recorded + unrecorded = 200;
// no master's memory or data grows by more than a few megabytes.
func TestATenantsRefusalFloodStaysSmall(t *testing.T) {
	t.Parallel()
	cl := startCluster(t, clusterSpec{masters: 3})
	led := &auditLedger{}
	cl.setQueues(led, map[string]wire.QueueSpec{"a": {}})
	token := cl.createTenant(led, "flood", "a")
	leader, _ := cl.leader(20 * time.Second)

	rssBefore, dataBefore := map[string]int{}, map[string]int64{}
	for _, m := range cl.Masters {
		rssBefore[m.ID], dataBefore[m.ID] = rssMB(t, m.Proc().Pid()), dirBytes(t, m.DataDir)
	}
	target := strings.Repeat("a", 1<<20)
	const flood, senders = 200, 8
	start := time.Now()
	errs := make(chan error, flood)
	for s := range senders {
		go func() {
			for i := s; i < flood; i += senders {
				r, err := call(http.MethodDelete, leader.URL+wire.MasterAPI.DeleteQueue.Path(target), token, nil)
				switch {
				case err != nil:
					errs <- fmt.Errorf("refused request %d: %w", i, err)
				case r.status != http.StatusForbidden || len(r.body) > 1024:
					errs <- fmt.Errorf("refused request %d: %d, %d bytes: want a 403 of a few hundred bytes (%.200s)", i, r.status, len(r.body), r.body)
				default:
					errs <- nil
				}
			}
		}()
	}
	for range flood {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	took := time.Since(start)
	// The ration: a burst of 20, then 2 a second (and a little for the
	// tick that says what went unrecorded).
	allowed := 20 + int(2*took.Seconds()) + 3

	// Recorded and unrecorded refusals add up to the flood once the
	// leader's tick has said how many it left out.
	var entries []wire.AuditEntry
	var size int
	deadline := time.Now().Add(30 * time.Second)
	for {
		r, err := call(http.MethodGet, leader.URL+wire.MasterAPI.AuditLog.Path()+"?tenant=flood", secret, nil)
		if err != nil || r.status != http.StatusOK {
			t.Fatalf("GET /v1/audit: %v %d %.200s", err, r.status, r.body)
		}
		var log wire.Audit
		if err := json.Unmarshal([]byte(r.body), &log); err != nil {
			t.Fatal(err)
		}
		entries, size = log.Entries, len(r.body)
		recorded, unrecorded := 0, 0
		for _, e := range entries {
			if e.Principal != "tenant:flood" {
				continue
			}
			unrecorded += e.Suppressed
			if e.Outcome != wire.AuditNotRecorded {
				recorded++
				if e.Status != http.StatusForbidden || len(e.Target) > wire.MaxAuditText+32 || !strings.Contains(e.Target, "bytes cut") {
					t.Fatalf("an entry of the flood: status %d, target of %d bytes (%.60q): want 403 and the target cut, saying so", e.Status, len(e.Target), e.Target)
				}
			}
		}
		if recorded+unrecorded == flood {
			if recorded > allowed {
				t.Errorf("%d of %d refusals recorded one by one in %s: want the ration's %d or fewer", recorded, flood, took.Round(time.Millisecond), allowed)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("audit: %d recorded + %d unrecorded refusals of %d", recorded, unrecorded, flood)
		}
		time.Sleep(200 * time.Millisecond) // polling with a deadline: the count comes with a tick
	}
	if size > 64<<10 {
		t.Errorf("GET /v1/audit?tenant=flood is %d bytes after the flood", size)
	}
	for _, m := range cl.Masters {
		rss, data := rssMB(t, m.Proc().Pid()), dirBytes(t, m.DataDir)
		if rss-rssBefore[m.ID] > 100 || data-dataBefore[m.ID] > 16<<20 {
			t.Errorf("master %s: RSS %d MB → %d MB, data %d → %d bytes: the flood is being kept", m.ID, rssBefore[m.ID], rss, dataBefore[m.ID], data)
		}
	}
	// The leader stayed the leader: no write of the flood was big enough
	// to stall its heartbeats.
	if now, _ := cl.leader(20 * time.Second); now.ID != leader.ID {
		t.Errorf("leadership moved from %s to %s during the flood", leader.ID, now.ID)
	}
}

// rssMB is a process's resident memory in MB.
func rssMB(t *testing.T, pid int) int {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			return kb / 1024
		}
	}
	t.Fatalf("no VmRSS for pid %d", pid)
	return 0
}

// dirBytes is the size of the files under dir.
func dirBytes(t *testing.T, dir string) int64 {
	t.Helper()
	var n int64
	err := filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			n += fi.Size()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}
