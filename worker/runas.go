package worker

import (
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
)

// With --run-as USER the worker, itself root, runs every executor and
// driver as USER, and keeps tenants apart with a group per tenant: each
// app and each driver gets a gid of its own (from tenantGIDBase up, no
// /etc/group entry needed) as its process's only group, root's
// supplementary groups dropped. The directories:
//
//	work/               root, 0711: reachable by path, not listable
//	work/APP/           root:GID(APP), 0750: only APP's executors enter it
//	work/APP/N/         root:GID(APP), 0770: executor N's
//	work/drivers/       root, 0711
//	work/drivers/D/     root:GID(D), 0770: driver D's
//	stdout, stderr      root:GID, 0640: written through the descriptors
//	                    the worker opened, readable by the tenant
//
// All tenants share USER's uid, so what keeps one out of another's files is
// the directory it cannot enter (its group is not theirs). The worker's
// credentials (its secret file, its TLS key) are root's; no child runs as
// root, and no child's environment holds them. Without --run-as, a worker
// running as root runs its tenants as root, and says so when it starts.

// tenantGIDBase is the first gid given to tenants; tenantGIDs of them.
const (
	tenantGIDBase = 2_000_000_000
	tenantGIDs    = 100_000_000
)

// runAs is the user tenant processes run as, and the gids of the tenants.
type runAs struct {
	name string
	uid  uint32
	home string

	mu   sync.Mutex
	used map[uint32]bool // gids of the tenant directories present
}

// resolveRunAs looks USER (a name or a numeric uid) up. A worker that is
// not root can run processes as itself only.
func resolveRunAs(spec string) (*runAs, error) {
	if spec == "" {
		return nil, nil
	}
	u, err := user.Lookup(spec)
	if err != nil {
		if u, err = user.LookupId(spec); err != nil {
			return nil, fmt.Errorf("--run-as %q: no such user", spec)
		}
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("--run-as %q: uid %q is not a number", spec, u.Uid)
	}
	if os.Geteuid() != 0 {
		return nil, fmt.Errorf("--run-as %q: the worker runs as uid %d, not root, so it cannot start processes as another user or give them groups", spec, os.Geteuid())
	}
	return &runAs{name: u.Username, uid: uint32(uid), home: u.HomeDir, used: map[uint32]bool{}}, nil
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
			return fmt.Errorf("--run-as %s: --work-dir %s: %w", r.name, workDir, err)
		}
		if fi.Mode().Perm()&0o001 == 0 {
			return fmt.Errorf("--run-as %s: --work-dir %s is out of its reach: %s is %v (others need x)", r.name, workDir, d, fi.Mode().Perm())
		}
		if d == filepath.Dir(d) {
			return nil
		}
	}
}

// credential is the SysProcAttr credential of a process of the tenant
// whose group is gid (nil without --run-as: the worker's own user).
func (r *runAs) credential(gid uint32) *syscall.Credential {
	if r == nil {
		return nil
	}
	return &syscall.Credential{Uid: r.uid, Gid: gid, Groups: []uint32{}}
}

// prepare gives a process's directory dir (under workDir) and its logs to
// its tenant, whose directory is tenantDir (dir's parent for an executor,
// dir itself for a driver); it returns the tenant's gid. A tenant keeps the
// gid its directory has (a relaunch, a restarted worker); a new one gets a
// gid no tenant directory has.
func (r *runAs) prepare(workDir, tenantDir, dir string, logs ...string) (uint32, error) {
	if r == nil {
		return 0, nil
	}
	gid, err := r.gidOf(workDir, tenantDir)
	if err != nil {
		return 0, err
	}
	for d := filepath.Dir(tenantDir); ; d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o711); err != nil {
			return 0, fmt.Errorf("--run-as: %w", err)
		}
		if d == workDir || d == filepath.Dir(d) {
			break
		}
	}
	set := func(path string, mode os.FileMode) error {
		if err := os.Lchown(path, 0, int(gid)); err != nil {
			return fmt.Errorf("--run-as: %s to group %d: %w", path, gid, err)
		}
		return os.Chmod(path, mode)
	}
	if tenantDir != dir {
		if err := set(tenantDir, 0o750); err != nil {
			return 0, err
		}
	}
	if err := set(dir, 0o770); err != nil {
		return 0, err
	}
	for _, l := range logs {
		if err := set(l, 0o640); err != nil {
			return 0, err
		}
	}
	return gid, nil
}

// gidOf is tenantDir's gid: the one it has, or a new one.
func (r *runAs) gidOf(workDir, tenantDir string) (uint32, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.used) == 0 {
		r.scan(workDir)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(tenantDir, &st); err == nil && st.Gid >= tenantGIDBase && st.Gid < tenantGIDBase+tenantGIDs {
		r.used[st.Gid] = true
		return st.Gid, nil
	}
	for g := uint32(tenantGIDBase); g < tenantGIDBase+tenantGIDs; g++ {
		if !r.used[g] {
			r.used[g] = true
			return g, nil
		}
	}
	return 0, fmt.Errorf("--run-as: all %d tenant groups are taken", tenantGIDs)
}

// scan notes the gids of the tenant directories already in workDir (left
// by an earlier run), so that no new tenant gets one.
func (r *runAs) scan(workDir string) {
	r.used[0] = true // never a tenant's; keeps the map non-empty once scanned
	for _, pattern := range []string{"*", filepath.Join(driversDir, "*")} {
		matches, _ := filepath.Glob(filepath.Join(workDir, pattern))
		for _, m := range matches {
			var st syscall.Stat_t
			if syscall.Stat(m, &st) == nil {
				r.used[st.Gid] = true
			}
		}
	}
}
