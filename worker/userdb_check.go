package worker

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"syscall"
	"time"
)

// Serving names is not enough: glibc asks nss-systemd only where
// /etc/nsswitch.conf says so ("passwd: files systemd", "group: files
// systemd") and libnss-systemd is installed. The worker cannot see that
// from Go (a CGO_ENABLED=0 build's os/user reads /etc/passwd only), so it
// asks glibc, through getent, as a tenant would.

// namesCheckTimeout bounds the check; nss-systemd's own is 45 s a call.
const namesCheckTimeout = 10 * time.Second

// noNamesHelp is what the worker says when its identities have no name.
const noNamesHelp = "dynamic identities have no name on this host (nss-systemd not installed, or `systemd` missing from passwd/group in /etc/nsswitch.conf): " +
	"programs that look up their user (Spark's executors through Hadoop's login) fail; install libnss-systemd or give the tenant a unixUser"

// checkNames runs getent, as identity id itself (its uid and gid, no
// groups, an empty environment: it sees what a tenant sees, and learns
// nothing of the worker), for the user and the group id, and returns what
// is wrong: "" when both resolve to identityName(id).
func checkNames(ctx context.Context, getent string, id uint32) string {
	ctx, cancel := context.WithTimeout(ctx, namesCheckTimeout)
	defer cancel()
	want := identityName(id)
	for _, db := range []string{"passwd", "group"} {
		cmd := exec.CommandContext(ctx, getent, db, strconv.FormatUint(uint64(id), 10))
		cmd.Env = []string{"PATH=/usr/bin:/bin", "LC_ALL=C"}
		cmd.Dir = "/"
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: id, Gid: id, Groups: []uint32{}}}
		out, err := cmd.Output()
		name, _, _ := bytes.Cut(out, []byte(":"))
		var exit *exec.ExitError
		switch {
		case err == nil && string(name) == want:
			continue
		case err == nil:
			return fmt.Sprintf("%s %d is %q on this host, not %q: another source names this worker's identities; give the workers of this host a range no one else uses", db, id, name, want)
		case errors.As(err, &exit) && exit.ExitCode() == 2: // getent: not found
			return fmt.Sprintf("getent %s %d finds nothing: %s", db, id, noNamesHelp)
		default:
			return fmt.Sprintf("getent %s %d: %v: %s", db, id, err, noNamesHelp)
		}
	}
	return ""
}

// checkNamesAtStart warns, once, if this host does not resolve the names
// the worker serves (names: nil without --run-as dynamic). A socket
// elsewhere than nss-systemd looks (a test's) is not checked.
func (w *Worker) checkNamesAtStart(ctx context.Context, names *nameServer) {
	if names == nil || names.path != defaultUserDBDir+"/"+names.db.service {
		return
	}
	getent, err := exec.LookPath("getent")
	if err != nil {
		w.log.Info("no getent: cannot check that this host resolves the names of this worker's identities", "err", err)
		return
	}
	// The range's last identity: an app holds it only after 1,562,499
	// others, so the check runs as no tenant's.
	if problem := checkNames(ctx, getent, names.db.hi-1); problem != "" && ctx.Err() == nil {
		w.log.Warn(problem)
		return
	}
	w.log.Info("this host resolves the names of this worker's identities", "example", identityName(names.db.hi-1))
}

// errSlotShared: another worker of this host has this one's slot number
// (in another --host-dir); the worker refuses to start.
var errSlotShared = errors.New("this worker's identities are another worker's")

// serveNames serves the names of this worker's identities, with --run-as
// dynamic (nil, nil without), and has the guardian remove the socket if
// the worker dies without stop.
func (w *Worker) serveNames(ctx context.Context) (*nameServer, error) {
	if w.cfg.runAs == nil || w.cfg.slot == nil {
		return nil, nil
	}
	dir := cmp.Or(w.cfg.userdbDir, defaultUserDBDir)
	names, err := serveNames(ctx, w.log, dir, w.cfg.slot.index, w.cfg.runAs.lo, w.cfg.runAs.hi)
	if err != nil {
		return nil, fmt.Errorf("--run-as dynamic: cannot serve the names of this worker's identities, without which it cannot see another worker of its slot on this host: %w", err)
	}
	w.guard.removeSocketAtExit(names.path, names.id)
	if names.shared {
		// Two workers of one slot number would hand the same uids to two
		// tenants (issue 30: one read the other's driver's secrets): this
		// one does not start.
		names.stop()
		return nil, fmt.Errorf("%w: another live worker of this host serves the names of slot %d's identities (%s), so its --host-dir is not this one's and the two would hand the same uids to their tenants; give every worker of a host one --host-dir",
			errSlotShared, w.cfg.slot.index, names.path)
	}
	w.log.Info("serving the names of this worker's identities to nss-systemd", "socket", names.path,
		"names", identityName(names.db.lo)+".."+identityName(names.db.hi-1))
	return names, nil
}
