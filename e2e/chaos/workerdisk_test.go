package chaos

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/berth-cluster/berth/internal/poll"
	"github.com/berth-cluster/berth/testkit/testcluster"
	"github.com/berth-cluster/berth/wire"
)

// A worker whose work directory fills (issue 21): each worker's work dir is
// a small tmpfs of its own. Filled under load, the worker must say so in
// the cluster's status (its heartbeat carries why), the master must place
// nothing new on it while it is full, what runs there must go on (the pid
// watch sees every watched executor keep its pid), and once space returns
// the worker takes work again.

// workerDiskMB is each worker's tmpfs: the processes' logs of a 100-fault
// run fit many times over, and filling it takes a fraction of a second.
const workerDiskMB = 256

// mountWorkerDisks mounts a tmpfs on each worker's work directory
// (dir/work-ID, as testcluster names it) until the test ends.
func mountWorkerDisks(t *testing.T, dir string, ids ...string) error {
	if os.Geteuid() != 0 {
		return errors.New("filling a worker's disk needs root, to mount a small tmpfs for it")
	}
	for _, id := range ids {
		if err := mountTmpfs(t, filepath.Join(dir, "work-"+id), workerDiskMB, 0o755); err != nil {
			return err
		}
	}
	return nil
}

// needWorkerDisks says why a worker's disk cannot be filled here.
func needWorkerDisks(ch *chaos) error { return ch.workerDisksErr }

// placedOn lists what runs or is being started on worker id in a leader's
// view: its executors (app/id) and drivers.
func placedOn(st wire.ClusterStatus, id string) map[string]bool {
	out := map[string]bool{}
	for _, a := range st.ActiveApps {
		for _, e := range a.Executors {
			if e.WorkerID == id && !e.State.Finished() {
				out[fmt.Sprintf("%s/%d", a.ID, e.ID)] = true
			}
		}
	}
	for _, d := range st.ActiveDrivers {
		if d.WorkerID == id {
			out[d.ID] = true
		}
	}
	return out
}

// workerDiskFull fills a worker's work dir under load, for long enough
// that the load would have placed work there, then frees it.
func (ch *chaos) workerDiskFull() ([]faultResult, error) {
	const kind = "worker disk full"
	w := ch.cl.Workers[0]
	filling := time.Now()
	free, err := fillDisk(w.WorkDir)
	if err != nil {
		return nil, err
	}
	t0 := time.Now()
	said, _, err := ch.until(kind+": the worker's disk full in the status", t0, t0.Add(backWithin), nil, func(st wire.ClusterStatus) string {
		for _, ws := range st.Workers {
			if ws.ID == w.ID && ws.DiskFull != "" {
				return ""
			}
		}
		return w.ID + "'s disk not said to be full"
	})
	if err == nil {
		// A launch decided just before the master heard may still show;
		// from a moment later on, nothing new may appear there. The
		// watch lasts 3 s: its length is the fault's.
		poll.Sleep(context.Background(), 500*time.Millisecond)
		var st wire.ClusterStatus
		_, st, err = ch.leaderStatus()
		before := placedOn(st, w.ID)
		placedElsewhere := 0
		for end := time.Now().Add(3 * time.Second); err == nil && time.Now().Before(end); poll.Sleep(context.Background(), 100*time.Millisecond) {
			_, now, lerr := ch.leaderStatus()
			if lerr != nil {
				continue // a leader's fault is not this one's; the next read will do
			}
			for p := range placedOn(now, w.ID) {
				if !before[p] {
					err = fmt.Errorf("%s: %s placed on %s while its disk was full (%s)", kind, p, w.ID, diskFullOf(now, w.ID))
				}
			}
			placedElsewhere = max(placedElsewhere, len(placedOn(now, ch.cl.Workers[1].ID)))
		}
		if err == nil && placedElsewhere == 0 {
			err = fmt.Errorf("%s: nothing ran on the other worker meanwhile: the check saw no load", kind)
		}
	}
	if ferr := free(); ferr != nil {
		return nil, errors.Join(err, ferr)
	}
	if err != nil {
		return nil, err
	}
	freed := time.Now()
	back, _, err := ch.until(kind+": the worker's disk no longer full", freed, freed.Add(backWithin), nil, func(st wire.ClusterStatus) string {
		return diskFullOf(st, w.ID)
	})
	if err != nil {
		return nil, err
	}
	res, err := ch.back(kind, freed, 0)
	if err != nil {
		return nil, err
	}
	res.failover = said.Sub(t0) // for this fault, "back" is until the master knew
	res.more = append(res.more, took("filling the disk", t0.Sub(filling)), took("disk said free again after space returned", back.Sub(freed)))
	return []faultResult{res}, nil
}

// diskFullOf is what the status says of worker id's disk ("" if nothing).
func diskFullOf(st wire.ClusterStatus, id string) string {
	for _, ws := range st.Workers {
		if ws.ID == id {
			return ws.DiskFull
		}
	}
	return ""
}

// leaderStatus is the current leader's view, asked with a short timeout.
func (ch *chaos) leaderStatus() (*testcluster.Master, wire.ClusterStatus, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	return ch.cl.Leader(ctx)
}
