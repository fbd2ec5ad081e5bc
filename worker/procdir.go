package worker

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/berth-cluster/berth/wire"
)

// A process's directory holds what the worker writes for it (its stdout
// and stderr, rolled logs, its resources file, a driver's copy of the CA)
// in a directory the process may read but not change, and below it the
// process's own home, its working directory, HOME and TMPDIR:
//
//	work/                 root 0711 (with --run-as): reachable, not listable
//	work/APP/             root:ID(APP) 0750: only APP's processes enter it
//	work/APP/N/           root:ID(APP) 0750: executor N's stdout, stderr...
//	work/APP/N/home/      ID(APP):ID(APP) 0700: executor N's own
//	work/drivers/         root 0711
//	work/drivers/D/       root:ID(D) 0750: driver D's stdout, stderr, ca.pem...
//	work/drivers/D/home/  ID(D):ID(D) 0700: driver D's own
//
// ID is the app's or the driver's identity (runas.go). A tenant can write
// nothing the worker later opens as root: the names the worker uses are in
// directories only root may change. Everything here is still done through
// descriptors (dirfd.go), so that a directory left by an older berth, whose
// layout let tenants write beside their logs, cannot trick the worker
// either. Without --run-as the layout is the same, owned by the worker's
// user.

const (
	homeDir = "home"   // the process's own directory
	caFile  = "ca.pem" // a driver's copy of the cluster's CA certificate
)

// procDir is a process's open directory and the identity it runs as.
type procDir struct {
	*dirHandle
	id  identity
	gid int // group of the worker's files in it: id.gid, -1 without --run-as
}

// home is the path of the process's own directory.
func (d *procDir) home() string { return filepath.Join(d.path, homeDir) }

// relDir is p's directory relative to the work directory, one name per
// level: APP/N for an executor, drivers/D for a driver.
func (p *proc) relDir() []string {
	if p.kind == kindExecutor {
		return []string{p.appID, strconv.Itoa(p.execID)}
	}
	return []string{driversDir, p.driverID}
}

// makeProcDir opens p's directory, making what is missing, and gives each
// level its owner and mode (with --run-as, p's identity is claimed on the
// way). Close it once the process started.
func (w *Worker) makeProcDir(p *proc) (*procDir, error) {
	root, err := openRootDir(w.cfg.WorkDir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	r := w.cfg.runAs
	if r != nil {
		if err := root.f.Chmod(0o711); err != nil {
			return nil, err
		}
	}
	parent, tenantName := root, p.appID
	if p.kind == kindDriver {
		tenantName = p.driverID
		if parent, err = root.sub(driversDir, true, 0o711); err != nil {
			return nil, err
		}
		defer parent.Close()
		if r != nil {
			if err := parent.f.Chmod(0o711); err != nil {
				return nil, err
			}
		}
	}
	tenant, err := parent.sub(tenantName, true, 0o750)
	if err != nil {
		return nil, err
	}
	d := &procDir{dirHandle: tenant, gid: -1}
	if r != nil {
		if p.user != "" {
			d.id, err = r.claimAs(tenant, p.user)
		} else {
			d.id, err = r.claim(root, tenant)
		}
		if err != nil {
			tenant.Close()
			return nil, err
		}
		d.gid = int(d.id.gid)
	}
	if p.kind == kindExecutor {
		dir, err := tenant.sub(strconv.Itoa(p.execID), true, 0o750)
		tenant.Close()
		if err != nil {
			return nil, err
		}
		d.dirHandle = dir
		if r != nil {
			if err := setOwner(dir.f, d.gid, 0o750); err != nil {
				dir.Close()
				return nil, err
			}
		}
	}
	home, err := d.sub(homeDir, true, 0o700)
	if err == nil && r != nil {
		err = chown(home.f, int(d.id.uid), d.gid, 0o700)
	}
	if home != nil {
		home.Close()
	}
	if err != nil {
		d.Close()
		return nil, fmt.Errorf("its home: %w", err)
	}
	return d, nil
}

// openLog opens the file of a stream (wire.LogStdout, wire.LogStderr) for
// appending: a restarted supervised driver keeps its earlier runs' output.
func (d *procDir) openLog(stream string) (*os.File, error) {
	f, err := d.openFile(stream, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o640)
	if err == nil {
		if err = setOwner(f, d.gid, 0o640); err != nil {
			f.Close()
		}
	}
	if err != nil {
		return nil, fmt.Errorf("opening its %s: %w", stream, err)
	}
	return f, nil
}

// openLogs opens stdout and stderr (openLog).
func (d *procDir) openLogs() (stdout, stderr *os.File, err error) {
	if stdout, err = d.openLog(wire.LogStdout); err != nil {
		return nil, nil, err
	}
	if stderr, err = d.openLog(wire.LogStderr); err != nil {
		stdout.Close()
		return nil, nil, err
	}
	return stdout, stderr, nil
}

// openProcDirToRead opens the directory of a process at rel (relDir's
// names) as it is, making nothing: the log routes read from it.
func (w *Worker) openProcDirToRead(rel ...string) (*dirHandle, error) {
	root, err := openRootDir(w.cfg.WorkDir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	return root.walk(false, 0, rel...)
}
