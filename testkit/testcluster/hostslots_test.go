package testcluster

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// A slot left by a killed test run (its worker gone, its work directory
// left in the temporary directory for longer than any run) is freed with
// its next identity kept; a held slot, a fresh one and one outside the
// temporary directory are left.
func TestStaleTestSlotsAreFreed(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "lock"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	old, fresh := t.TempDir(), t.TempDir()
	now := time.Now()
	if err := os.Chtimes(old, now.Add(-3*time.Hour), now.Add(-3*time.Hour)); err != nil {
		t.Fatal(err)
	}
	write := func(name, work string) string {
		p := filepath.Join(dir, name)
		data, _ := json.Marshal(map[string]any{"workDir": work, "pid": 1, "nextId": 2000000007})
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	stale, held, young, elsewhere := write("slot-00", old), write("slot-01", old), write("slot-02", fresh), write("slot-03", "/var/lib/berth-worker")
	hold, err := os.OpenFile(held, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Close()
	if err := unix.Flock(int(hold.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	if err := freeStaleSlotsNow(dir, now); err != nil {
		t.Fatal(err)
	}
	read := func(p string) map[string]any {
		var rec map[string]any
		data, _ := os.ReadFile(p)
		if err := json.Unmarshal(data, &rec); err != nil {
			t.Fatalf("%s: %q: %v", p, data, err)
		}
		return rec
	}
	if rec := read(stale); rec["workDir"] != "" || rec["nextId"] != float64(2000000007) {
		t.Errorf("the stale slot: %v, want its work dir cleared and its next identity kept", rec)
	}
	for p, want := range map[string]string{held: old, young: fresh, elsewhere: "/var/lib/berth-worker"} {
		if rec := read(p); rec["workDir"] != want {
			t.Errorf("%s: %v, want it left naming %s", filepath.Base(p), rec, want)
		}
	}
}
