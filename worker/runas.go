package worker

import (
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// With --run-as dynamic the worker, itself root, runs every app's
// executors and every driver under an identity of its own: a uid and a gid
// (the same number, from tenantIDBase up, with no /etc/passwd entry, as
// systemd's DynamicUser and Nomad's dynamic workload users do), no
// supplementary groups. Processes of two apps, or of an app and a driver,
// thus cannot signal or trace each other, read each other's environment
// (/proc/PID/environ: a driver's BERTH_TOKEN), files or homes, or move
// into each other's cgroups (whose files stay root's). An app's executors
// on one worker share its identity.
//
// Identities never collide on a host, however many workers run there:
// each worker hands out only those of its slot of the host (hostslot.go).
//
// The identity is kept on the app's (or driver's) directory as its group,
// so a relaunch, or a restarted worker, finds it again. A new app gets the
// next number after the last given out, not the lowest free one, and that
// next number is kept in the slot's file (hostslot.go), so neither a
// restart with a wiped work directory nor a new worker of the slot starts
// the range over: a number comes back only after the whole range went
// round, long after whatever the old app left in /tmp is gone. The directories are laid out in
// procdir.go.

// tenantIDBase is the first uid and gid given to an app or a driver;
// tenantIDs of them.
const (
	tenantIDBase = 2_000_000_000
	tenantIDs    = 100_000_000
)

// runAsDynamic is the one value --run-as takes.
const runAsDynamic = "dynamic"

// identity is the uid and gid of an app's or a driver's processes.
type identity struct{ uid, gid uint32 }

// runAs hands out identities, from its worker's range of the host's
// (hostslot.go: no other worker of the host hands out one of them).
type runAs struct {
	mu      sync.Mutex
	lo, hi  uint32          // the range, [lo, hi)
	used    map[uint32]bool // ids of the directories present
	next    uint32          // the next id to try
	scanned bool
	slot    *hostSlot // keeps next across restarts; nil in tests of r alone
}

// within gives r its slot's identities to hand out, from the next one the
// slot says (a new worker of the slot goes on where the last one stopped).
func (r *runAs) within(slot *hostSlot) {
	if r == nil {
		return
	}
	r.lo, r.hi = slot.identities()
	r.next, r.slot = r.lo, slot
	if n := slot.rec.NextID; r.mine(n) {
		r.next = n
	}
}

// mine reports whether id is of r's range: a directory whose group is an
// identity of another range (another worker's, or of an earlier layout)
// is given one of r's.
func (r *runAs) mine(id uint32) bool { return id >= r.lo && id < r.hi }

// resolveRunAs checks --run-as. A shared user for every tenant is refused:
// with one uid they could signal, trace and read each other.
func resolveRunAs(spec string) (*runAs, error) {
	switch spec {
	case "":
		return nil, nil
	case runAsDynamic:
	default:
		return nil, fmt.Errorf("--run-as %q: want %q (a uid and gid of its own for each app and driver); one user for every tenant would let each signal, trace and read the environment of the others", spec, runAsDynamic)
	}
	if os.Geteuid() != 0 {
		return nil, fmt.Errorf("--run-as %s: the worker runs as uid %d, not root, so it cannot start processes as other users", spec, os.Geteuid())
	}
	return &runAs{used: map[uint32]bool{}, lo: tenantIDBase, hi: tenantIDBase + tenantIDs, next: tenantIDBase}, nil
}

// checkReachable refuses a work directory the tenants could not reach: a
// directory above it that others may not traverse would fail every launch
// ("permission denied" as it starts).
func (r *runAs) checkReachable(workDir string) error {
	if r == nil {
		return nil
	}
	for d := filepath.Dir(workDir); ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil {
			return fmt.Errorf("--run-as: --work-dir %s: %w", workDir, err)
		}
		if fi.Mode().Perm()&0o001 == 0 {
			return fmt.Errorf("--run-as: --work-dir %s is out of the tenants' reach: %s is %v (others need x)", workDir, d, fi.Mode().Perm())
		}
		if d == filepath.Dir(d) {
			return nil
		}
	}
}

// credential is the SysProcAttr credential of a process of identity id
// (nil without --run-as: the worker's own user).
func (r *runAs) credential(id identity) *syscall.Credential {
	if r == nil {
		return nil
	}
	return &syscall.Credential{Uid: id.uid, Gid: id.gid, Groups: []uint32{}}
}

// claim gives the open tenant directory tenant (an app's or a driver's,
// in the work directory root) to its identity: the one its group already
// names, or the next free one; it returns that identity. Launches of one
// app claim under one lock, so they all find the same.
func (r *runAs) claim(root, tenant *dirHandle) (identity, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var st unix.Stat_t
	if err := unix.Fstat(tenant.fd(), &st); err != nil {
		return identity{}, err
	}
	id := st.Gid
	if !r.mine(id) {
		var err error
		if id, err = r.allocate(root); err != nil {
			return identity{}, err
		}
	}
	r.used[id] = true
	if err := setOwner(tenant.f, int(id), 0o750); err != nil {
		return identity{}, fmt.Errorf("giving %s to its group %d: %w", tenant, id, err)
	}
	return identity{uid: id, gid: id}, nil
}

// claimAs gives the open tenant directory to the Unix user name (a
// tenant's unixUser, which must exist on this worker) and its primary
// group, and returns that identity: every app and driver of the tenant
// runs as that user. Give the user a group of its own: its group can read
// the tenant's directories.
func (r *runAs) claimAs(tenant *dirHandle, name string) (identity, error) {
	u, err := user.Lookup(name)
	if err != nil {
		return identity{}, tenantUserError{fmt.Errorf("its tenant's Unix user %q: %w", name, err)}
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err1 != nil || err2 != nil {
		return identity{}, tenantUserError{fmt.Errorf("its tenant's Unix user %q: uid %s, gid %s: not numbers", name, u.Uid, u.Gid)}
	}
	if why := refusedTenantUser(uint32(uid), uint32(gid), uint32(os.Geteuid())); why != "" {
		return identity{}, tenantUserError{fmt.Errorf("its tenant's Unix user %q (uid %d, gid %d): %s: not a user a tenant may run as", name, uid, gid, why)}
	}
	if err := setOwner(tenant.f, int(gid), 0o750); err != nil {
		return identity{}, fmt.Errorf("giving %s to group %d: %w", tenant, gid, err)
	}
	return identity{uid: uint32(uid), gid: uint32(gid)}, nil
}

// tenantUserError: the Unix user a tenant runs as is missing here, or is
// not one a tenant may run as. It is the tenant's (its apps fail), not the
// worker's health: counted against the worker, three apps of one tenant
// whose user this host lacks benched the worker for every tenant.
type tenantUserError struct{ err error }

func (e tenantUserError) Error() string { return e.err.Error() }
func (e tenantUserError) Unwrap() error { return e.err }

// refusedTenantUser says why a tenant's Unix user of uid and gid may not
// be run as on a worker running as self, "" if it may: root, or root's
// group, would own the host; the worker's own user would read its
// secret, its certificates and every tenant's directory; an id of the
// range dynamic tenants are given here would share a uid with another
// tenant's processes (and read their /proc/PID/environ, as tenant c read
// tenant a's token).
func refusedTenantUser(uid, gid, self uint32) string {
	switch {
	case uid == 0:
		return "root"
	case gid == 0:
		return "root's group"
	case uid == self:
		return "the worker's own user"
	case isTenantID(uid) || isTenantID(gid):
		return fmt.Sprintf("in the range of the ids this worker gives dynamic tenants (%d to %d)", tenantIDBase, tenantIDBase+tenantIDs-1)
	}
	return ""
}

func isTenantID(id uint32) bool { return id >= tenantIDBase && id < tenantIDBase+tenantIDs }

// allocate returns the next id no tenant directory has. The caller holds
// r.mu.
func (r *runAs) allocate(root *dirHandle) (uint32, error) {
	if !r.scanned {
		r.scan(root)
	}
	for range r.hi - r.lo {
		id := r.next
		r.next++
		if r.next >= r.hi {
			r.next = r.lo
			r.scan(root) // round again: only what is on disk now is taken
		}
		if !r.used[id] {
			if r.slot != nil {
				if err := r.slot.keepNext(r.next); err != nil {
					return 0, fmt.Errorf("--run-as: keeping the next identity: %w", err)
				}
			}
			return id, nil
		}
	}
	return 0, fmt.Errorf("--run-as: all %d identities of this worker's range are taken", r.hi-r.lo)
}

// scan notes the ids of the tenant directories in the work directory (an
// earlier run's too) and moves the next id past the highest. The caller
// holds r.mu.
func (r *runAs) scan(root *dirHandle) {
	r.scanned = true
	clear(r.used)
	highest := uint32(0)
	note := func(d *dirHandle, name string) {
		var st unix.Stat_t
		if unix.Fstatat(d.fd(), name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && r.mine(st.Gid) {
			r.used[st.Gid] = true
			highest = max(highest, st.Gid)
		}
	}
	for _, name := range dirNames(root) {
		note(root, name)
	}
	if drivers, err := root.sub(driversDir, false, 0); err == nil {
		for _, name := range dirNames(drivers) {
			note(drivers, name)
		}
		drivers.Close()
	}
	if highest > 0 && r.next <= highest {
		r.next = highest + 1
		if r.next >= r.hi {
			r.next = r.lo
		}
	}
}

// dirNames lists d's entries (read through a descriptor of its own, so d's
// offset is left alone).
func dirNames(d *dirHandle) []string {
	dup, err := d.reopen()
	if err != nil {
		return nil
	}
	defer dup.Close()
	names, _ := dup.f.Readdirnames(-1)
	return names
}
