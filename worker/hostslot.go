package worker

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"golang.org/x/sys/unix"

	"github.com/berth-cluster/berth/wire"
)

// Several workers may run on one host (README's own layout runs two), and
// what each hands out must not collide with another's: the identities of
// --run-as dynamic (two tenants given one uid could signal and read each
// other) and the ports of --port-range (two processes given one port
// cannot both bind it). Each worker takes a slot of the host in a
// directory every worker of the host shares (--host-dir): a file it holds
// locked (flock) while it runs, which names its work directory and its
// port range. A slot is the worker's proof that a range is its own: slot
// i gives identities from tenantIDBase + i*idsPerSlot, and, unless
// --port-range is given, the ports defaultPortBlock(i). Slots are taken
// under the directory's lock; a work directory keeps its slot across
// restarts (its directories' identities stay in its range), and a slot
// whose worker is gone and whose work directory was removed is given
// again. A worker refuses to start where it cannot guarantee this: the
// directory is not its own, another live worker runs with its work
// directory, its explicit port range overlaps a live worker's, or every
// slot is taken.

const (
	hostSlots  = 64
	idsPerSlot = tenantIDs / hostSlots // 1,562,500 identities a worker
	portBlock  = 1000                  // ports a worker takes by default
	lockWait   = 10 * time.Second      // for the directory's lock
	lockFile   = "lock"
	slotPrefix = "slot-"
)

// DefaultHostDir is where the workers of a host meet: a root worker's in
// /var/lib/berth (kept across reboots, as its work directories are), a
// user's in its own directory of the temporary one.
func DefaultHostDir() string {
	if os.Geteuid() == 0 {
		return "/var/lib/berth/host"
	}
	return filepath.Join(os.TempDir(), "berth-host-"+strconv.Itoa(os.Geteuid()))
}

// defaultPortBlock is slot i's ports when --port-range is not given: the
// i-th block of portBlock ports of wire.DefaultPortRange.
func defaultPortBlock(i int) (wire.PortRange, bool) {
	first := wire.DefaultPortRange.First + i*portBlock
	r := wire.PortRange{First: first, Last: first + portBlock - 1}
	return r, r.Last <= wire.DefaultPortRange.Last
}

// slotRecord is what a slot's file says of its worker.
type slotRecord struct {
	WorkDir string         `json:"workDir"`
	Ports   wire.PortRange `json:"ports"`
	Pid     int            `json:"pid"`
	// NextID is the next identity of the slot's range to hand out: kept
	// here, not found again from the work directory, so that neither a
	// work directory wiped nor a new worker taking the slot starts the
	// range over (a new tenant given the uid of one gone a minute ago
	// would own what that one left in /tmp and in IPC objects).
	NextID uint32 `json:"nextId,omitempty"`
}

// hostSlot is a slot this worker holds: its index, its locked file and
// what it says.
type hostSlot struct {
	index int
	file  *os.File
	rec   slotRecord
}

// keepNext records next as the slot's next identity to hand out.
func (s *hostSlot) keepNext(next uint32) error {
	s.rec.NextID = next
	return s.write()
}

// write puts s.rec in the slot's file (this worker holds its lock). The
// record is written over the old one before the file is cut to it: cut
// first, a crash in between left an empty file, read as a free slot whose
// identities start again at the range's first (the uid of a tenant gone
// a minute ago). Written first, a crash leaves the new record with the
// old one's tail after it, which readSlot ignores. (The lock is the
// file's own, so it cannot be replaced by a rename.)
func (s *hostSlot) write() error {
	data, _ := json.Marshal(s.rec)
	data = append(data, '\n')
	_, err := s.file.WriteAt(data, 0)
	if err == nil {
		err = s.file.Truncate(int64(len(data)))
	}
	if err == nil {
		err = s.file.Sync()
	}
	if err != nil {
		return fmt.Errorf("--host-dir: writing %s: %w", s.file.Name(), err)
	}
	return nil
}

// identities is the slot's range of identities, [lo, hi).
func (s *hostSlot) identities() (lo, hi uint32) {
	lo = tenantIDBase + uint32(s.index)*idsPerSlot
	return lo, lo + idsPerSlot
}

// release gives the slot back (the process's exit does too).
func (s *hostSlot) release() {
	if s != nil && s.file != nil {
		s.file.Close()
		s.file = nil
	}
}

// claimHostSlot takes this worker's slot in dir for workDir and returns it
// with the worker's port range: ports if given (explicit), else the
// slot's default block.
func claimHostSlot(dir, workDir string, ports wire.PortRange, explicit bool) (*hostSlot, wire.PortRange, error) {
	if err := ownDir(dir); err != nil {
		return nil, ports, err
	}
	unlock, err := lockDir(filepath.Join(dir, lockFile))
	if err != nil {
		return nil, ports, err
	}
	defer unlock()
	mine, free := -1, -1
	live, kept := map[int]slotRecord{}, map[int]uint32{}
	for i := range hostSlots {
		rec, exists, held, err := readSlot(dir, i)
		if err != nil {
			return nil, ports, err
		}
		if !exists {
			if free < 0 {
				free = i
			}
			continue
		}
		kept[i] = rec.NextID
		switch {
		case rec.WorkDir == workDir && held:
			return nil, ports, fmt.Errorf("--work-dir %s: another worker runs with it on this host (pid %d): give each worker a work directory of its own", workDir, rec.Pid)
		case rec.WorkDir == workDir:
			mine = i
		case held:
			live[i] = rec
		case free < 0 && !dirExists(rec.WorkDir):
			free = i // its worker and its directories are gone
		}
	}
	i := mine
	if i < 0 {
		i = free
	}
	if i < 0 {
		return nil, ports, fmt.Errorf("--host-dir %s: all %d slots of this host are taken by workers or by the work directories they left", dir, hostSlots)
	}
	if !explicit {
		var ok bool
		if ports, ok = defaultPortBlock(i); !ok {
			return nil, ports, fmt.Errorf("--port-range: this worker is the %dth of this host, past the %d blocks of %d ports of the default range %d-%d: give it a range of its own",
				i+1, wire.DefaultPortRange.Size()/portBlock, portBlock, wire.DefaultPortRange.First, wire.DefaultPortRange.Last)
		}
	}
	for _, other := range live {
		if ports.First <= other.Ports.Last && other.Ports.First <= ports.Last {
			return nil, ports, fmt.Errorf("--port-range %d-%d overlaps %d-%d, the range of the worker of work dir %s (pid %d) on this host: two processes given one port cannot both bind it",
				ports.First, ports.Last, other.Ports.First, other.Ports.Last, other.WorkDir, other.Pid)
		}
	}
	f, err := os.OpenFile(slotPath(dir, i), os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, ports, fmt.Errorf("--host-dir: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		return nil, ports, fmt.Errorf("--host-dir: locking %s: %w", f.Name(), err)
	}
	slot := &hostSlot{index: i, file: f, rec: slotRecord{WorkDir: workDir, Ports: ports, Pid: os.Getpid(), NextID: kept[i]}}
	if err := slot.write(); err != nil {
		f.Close()
		return nil, ports, err
	}
	return slot, ports, nil
}

func slotPath(dir string, i int) string {
	return filepath.Join(dir, fmt.Sprintf("%s%02d", slotPrefix, i))
}

// readSlot reads slot i: whether its file exists, and whether a live
// worker holds it (its lock is taken).
func readSlot(dir string, i int) (rec slotRecord, exists, held bool, err error) {
	f, err := os.OpenFile(slotPath(dir, i), os.O_RDWR|unix.O_NOFOLLOW, 0)
	if errors.Is(err, os.ErrNotExist) {
		return rec, false, false, nil
	}
	if err != nil {
		return rec, true, false, fmt.Errorf("--host-dir: %w", err)
	}
	defer f.Close()
	switch err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); {
	case errors.Is(err, unix.EWOULDBLOCK):
		held = true
	case err != nil:
		return rec, true, false, fmt.Errorf("--host-dir: locking %s: %w", f.Name(), err)
	}
	var buf [4096]byte
	n, _ := f.ReadAt(buf[:], 0)
	// The first JSON value: what follows it is an older record's tail,
	// left by a crash between write's write and its cut.
	if n > 0 && json.NewDecoder(bytes.NewReader(buf[:n])).Decode(&rec) != nil {
		rec = slotRecord{} // torn by a crash mid-write: it names no work dir
	}
	return rec, true, held, nil // the lock, if we took it, goes with f
}

// ownDir makes dir (0700) and checks that it is this user's directory,
// which no other user may write: another user who could would hand out
// the slots.
func ownDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("--host-dir %s: %w", dir, err)
	}
	var st unix.Stat_t
	if err := unix.Lstat(dir, &st); err != nil {
		return fmt.Errorf("--host-dir %s: %w", dir, err)
	}
	switch {
	case st.Mode&unix.S_IFMT != unix.S_IFDIR:
		return fmt.Errorf("--host-dir %s: not a directory (a link?): the workers of this host cannot share it safely", dir)
	case int(st.Uid) != os.Geteuid():
		return fmt.Errorf("--host-dir %s belongs to uid %d, not this worker's %d: the workers of this host cannot share it safely", dir, st.Uid, os.Geteuid())
	case st.Mode&0o022 != 0:
		return fmt.Errorf("--host-dir %s is writable by others (mode %o): the workers of this host cannot share it safely", dir, st.Mode&0o777)
	}
	return nil
}

// lockDir takes the host directory's lock, waiting up to lockWait for a
// worker starting at the same time; it returns the unlock.
func lockDir(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, fmt.Errorf("--host-dir: %w", err)
	}
	deadline := time.Now().Add(lockWait)
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) || time.Now().After(deadline) {
			f.Close()
			return nil, fmt.Errorf("--host-dir: locking %s: %w", path, err)
		}
		time.Sleep(20 * time.Millisecond) // another worker of the host is taking its slot
	}
}

func dirExists(path string) bool {
	st, err := os.Stat(path)
	return path != "" && err == nil && st.IsDir()
}
