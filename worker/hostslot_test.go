package worker

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/berth-cluster/berth/wire"
)

// Two workers on one host handed out one uid (tenant c's executor read
// tenant a's driver's environment) and one port (23000, to both). Each
// now takes a slot of the host: disjoint identities, its own block of
// ports, and a start refused where that cannot hold.
func TestWorkersOfOneHostTakeSlotsOfTheirOwn(t *testing.T) {
	host := t.TempDir()
	workA, workB := t.TempDir(), t.TempDir()
	a, portsA, err := claimHostSlot(host, workA, wire.PortRange{}, false)
	if err != nil {
		t.Fatal(err)
	}
	b, portsB, err := claimHostSlot(host, workB, wire.PortRange{}, false)
	if err != nil {
		t.Fatal(err)
	}
	loA, hiA := a.identities()
	loB, hiB := b.identities()
	if a.index == b.index || loA < hiB && loB < hiA || hiA-loA != idsPerSlot || loA < tenantIDBase || hiB > tenantIDBase+tenantIDs {
		t.Errorf("slots %d [%d,%d) and %d [%d,%d): want two disjoint ranges of %d identities", a.index, loA, hiA, b.index, loB, hiB, idsPerSlot)
	}
	if portsA != (wire.PortRange{First: 20000, Last: 20999}) || portsB != (wire.PortRange{First: 21000, Last: 21999}) {
		t.Errorf("default ports %v and %v: want a block of 1000 each", portsA, portsB)
	}

	// A second worker with A's work directory while A runs.
	if _, _, err := claimHostSlot(host, workA, wire.PortRange{}, false); err == nil || !strings.Contains(err.Error(), "another worker runs with it") {
		t.Errorf("a second worker on A's work dir: %v", err)
	}
	// An explicit range over B's.
	if _, _, err := claimHostSlot(host, t.TempDir(), wire.PortRange{First: 21500, Last: 22500}, true); err == nil || !strings.Contains(err.Error(), "overlaps 21000-21999") || !strings.Contains(err.Error(), workB) {
		t.Errorf("a range over B's: %v", err)
	}
	// A restarted worker keeps its slot (its directories' identities are
	// of its range); a slot whose worker and work dir are gone is given
	// again, one whose work dir stays is not.
	a.release()
	again, _, err := claimHostSlot(host, workA, wire.PortRange{}, false)
	if err != nil || again.index != a.index {
		t.Fatalf("A restarted: slot %v, %v; want %d", again, err, a.index)
	}
	b.release()
	os.RemoveAll(workB)
	c, _, err := claimHostSlot(host, t.TempDir(), wire.PortRange{}, false)
	if err != nil || c.index != b.index {
		t.Errorf("a new worker after B and its work dir went: slot %v, %v; want B's %d", c, err, b.index)
	}
	for _, s := range []*hostSlot{again, c} {
		s.release()
	}
}

func TestAHostDirOthersCouldWriteIsRefused(t *testing.T) {
	host := filepath.Join(t.TempDir(), "host")
	if err := os.Mkdir(host, 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(host, 0o777)
	if _, _, err := claimHostSlot(host, t.TempDir(), wire.PortRange{}, false); err == nil || !strings.Contains(err.Error(), "writable by others") {
		t.Errorf("a world-writable host dir: %v", err)
	}
	link := filepath.Join(t.TempDir(), "link")
	os.Symlink(t.TempDir(), link)
	if _, _, err := claimHostSlot(link, t.TempDir(), wire.PortRange{}, false); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("a host dir that is a link: %v", err)
	}
}

// Past the default range's blocks, a worker must be given a range.
func TestTheThirteenthWorkerOfAHostNeedsAPortRange(t *testing.T) {
	host := t.TempDir()
	blocks := wire.DefaultPortRange.Size() / portBlock
	for i := range blocks {
		s, _, err := claimHostSlot(host, t.TempDir(), wire.PortRange{}, false)
		if err != nil {
			t.Fatalf("worker %d: %v", i+1, err)
		}
		defer s.release()
	}
	if _, _, err := claimHostSlot(host, t.TempDir(), wire.PortRange{}, false); err == nil || !strings.Contains(err.Error(), "--port-range") {
		t.Errorf("worker %d with the default range: %v", blocks+1, err)
	}
	s, _, err := claimHostSlot(host, t.TempDir(), wire.PortRange{First: 40000, Last: 40999}, true)
	if err != nil {
		t.Errorf("worker %d with a range of its own: %v", blocks+1, err)
	}
	s.release()
}

// A crash between the slot record's write and the file's cut leaves the
// new record with an older one's tail after it: the slot keeps its next
// identity (read as a free slot, its identities would start again at the
// range's first, a recent tenant's uid).
func TestASlotRecordWithAnOldTailKeepsItsNextID(t *testing.T) {
	dir := t.TempDir()
	torn := `{"workDir":"/w","nextId":2000000042}` + "\n" + `00042,"pid":12}` + "\n"
	if err := os.WriteFile(slotPath(dir, 3), []byte(torn), 0o600); err != nil {
		t.Fatal(err)
	}
	rec, exists, held, err := readSlot(dir, 3)
	if err != nil || !exists || held {
		t.Fatalf("readSlot: exists %v held %v err %v", exists, held, err)
	}
	if rec.NextID != 2000000042 || rec.WorkDir != "/w" {
		t.Errorf("the torn record read as %+v, want its next id 2000000042 and work dir /w", rec)
	}
}
