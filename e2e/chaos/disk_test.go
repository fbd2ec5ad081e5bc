package chaos

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/berth-cluster/berth/internal/httpx"
	"github.com/berth-cluster/berth/internal/poll"
	"github.com/berth-cluster/berth/testkit/testcluster"
	"github.com/berth-cluster/berth/wire"
)

// A disk that fills (issue 21): each master's data directory is a small
// tmpfs of its own, which a fault fills to the last byte with a file, then
// frees. Raft's leader stores an entry before it sends it, so a leader
// whose disk is full fails the write (503 disk_full, which clients retry
// elsewhere) and steps down; a follower's falls behind while the other
// two go on. Once space is back, the master must catch up with the log.

// smallDiskMB is each master's tmpfs: a run of 100 faults writes a few tens
// of MiB of Raft log (none is dropped: --raft-trailing-logs), and filling
// it takes a fraction of a second.
const smallDiskMB = 512

// mountSmallDisks mounts a tmpfs on each master's data directory (dir/mI,
// as testcluster names it) until the test ends; the error says why not
// (the disk faults are then skipped).
func mountSmallDisks(t *testing.T, dir string, masters int) error {
	if os.Geteuid() != 0 {
		return errors.New("filling a master's disk needs root, to mount a small tmpfs for it")
	}
	for i := 1; i <= masters; i++ {
		if err := mountTmpfs(t, filepath.Join(dir, fmt.Sprintf("m%d", i)), smallDiskMB, 0o700); err != nil {
			return err
		}
	}
	return nil
}

// mountTmpfs mounts a tmpfs of sizeMB with mode on d (made if need be)
// until the test ends.
func mountTmpfs(t *testing.T, d string, sizeMB int, mode os.FileMode) error {
	if err := os.MkdirAll(d, mode); err != nil {
		return err
	}
	if err := syscall.Mount("tmpfs", d, "tmpfs", 0, fmt.Sprintf("size=%dm,mode=%04o", sizeMB, mode)); err != nil {
		return fmt.Errorf("mounting a tmpfs on %s: %w", d, err)
	}
	t.Cleanup(func() { syscall.Unmount(d, syscall.MNT_DETACH) })
	return nil
}

// needSmallDisks says why a master's disk cannot be filled here.
func needSmallDisks(ch *chaos) error { return ch.disksErr }

// usedMiB is how much of dir's file system is in use.
func usedMiB(dir string) int64 {
	var st syscall.Statfs_t
	if syscall.Statfs(dir, &st) != nil {
		return -1
	}
	return int64(st.Blocks-st.Bfree) * st.Bsize >> 20
}

// fillDisk writes a file into dir until its file system has no space
// left, and returns a function that removes it.
func fillDisk(dir string) (free func() error, err error) {
	path := filepath.Join(dir, "chaos-filler")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, err
	}
	free = func() error { return os.Remove(path) }
	chunk := make([]byte, 1<<20)
	for size := len(chunk); size >= 512; {
		if _, err := f.Write(chunk[:size]); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				f.Close()
				free()
				return nil, fmt.Errorf("filling %s: %w", dir, err)
			}
			size /= 2 // the last bytes, in smaller writes
		}
	}
	f.Close()
	return free, nil
}

// noSpace is Raft's log line for an entry a master could not store;
// electionWon, for an election it won.
var (
	noSpace     = regexp.MustCompile(`failed to (commit|append to) logs.*no space left on device`)
	electionWon = regexp.MustCompile(`msg="election won"`)
)

// firstWriteRefused waits until m's log says a write failed for want of
// space (a line more than before), and returns when that was seen.
func (ch *chaos) firstWriteRefused(m *testcluster.Master, before int, full time.Time) (time.Time, error) {
	// Up to two minutes: a master whose log was compacted (a lost-quorum
	// recovery) stores writes in bbolt's freed pages first.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var at time.Time
	// Every 25 ms: each look reads the master's whole log.
	if poll.Until(ctx, 25*time.Millisecond, func() bool {
		if len(m.Proc().LogMatches(noSpace)) > before {
			at = time.Now()
			return true
		}
		return false
	}) {
		return at, nil
	}
	return time.Time{}, fmt.Errorf("%s's disk is full, but its log has no write failed for want of space within %s", m.ID, time.Since(full).Round(time.Second))
}

// leaderDiskFull fills the leader's data directory under load: a write it
// cannot store fails, it steps down and another master leads. Then space
// returns and it must catch up.
func (ch *chaos) leaderDiskFull() ([]faultResult, error) {
	const kind = "leader disk full"
	m, st, err := ch.leader()
	if err != nil {
		return nil, err
	}
	refusedBefore := ch.diskFull.Load()
	linesBefore := len(m.Proc().LogMatches(noSpace))
	wonBefore := len(m.Proc().LogMatches(electionWon))
	used := usedMiB(m.DataDir)
	filling := time.Now()
	free, err := fillDisk(m.DataDir)
	if err != nil {
		return nil, err
	}
	full := time.Now()
	// The fault, as clients meet it, begins at the first write the
	// leader cannot store: until then it writes on into space its files
	// already hold (after a recovery, bolt's free pages can last seconds).
	t0, err := ch.firstWriteRefused(m, linesBefore, full)
	var res faultResult
	if err == nil {
		res, err = ch.back(kind, t0, st.Epoch+1)
	}
	if ferr := free(); ferr != nil {
		return nil, errors.Join(err, ferr)
	}
	if err != nil {
		return nil, err
	}
	// Its log is as long as the others' (the entry it could not store
	// went nowhere), so it may win an election again, and fail again.
	won := len(m.Proc().LogMatches(electionWon)) - wonBefore
	res.more = append(res.more, took("filling the disk", full.Sub(filling)), took("writes stored after it was full", t0.Sub(full)),
		counted("elections the full master won meanwhile", won))
	ch.t.Logf("%s: %s's disk (%d of %d MiB in use) filled; the workload's clients were answered 503 disk_full %d times meanwhile (and retried)",
		kind, m.ID, used, smallDiskMB, ch.diskFull.Load()-refusedBefore)
	freed := time.Now()
	if err := ch.caughtUpLog(m); err != nil {
		return []faultResult{res}, err
	}
	res.more = append(res.more, took("caught up once space was back", time.Since(freed)))
	return []faultResult{res}, ch.caughtUp(m)
}

// followerDiskFull fills a follower's data directory: writes go on through
// the other two, and no election is needed; it falls behind (its log says
// why) until space returns, then catches up.
func (ch *chaos) followerDiskFull() ([]faultResult, error) {
	const kind = "follower disk full"
	leader, st, err := ch.leader()
	if err != nil {
		return nil, err
	}
	var f *testcluster.Master
	for _, m := range ch.cl.Masters {
		if m != leader {
			f = m
			break
		}
	}
	linesBefore := len(f.Proc().LogMatches(noSpace))
	filling := time.Now()
	free, err := fillDisk(f.DataDir)
	if err != nil {
		return nil, err
	}
	t0 := time.Now() // the fault: from the moment the disk is full
	res, err := ch.back(kind, t0, st.Epoch)
	if err == nil {
		// The load goes on while the follower cannot store: the fault's
		// length, until its log says it could not (as the leader's: up to
		// two minutes, for a follower whose compacted log left bbolt free
		// pages to store in first; 10 s failed a 40-fault run's second
		// round).
		if _, werr := ch.firstWriteRefused(f, linesBefore, t0); werr != nil {
			err = fmt.Errorf("%s: %w", kind, werr)
		}
		poll.Sleep(context.Background(), 2*time.Second)
	}
	if err == nil {
		// A follower's full disk costs no election.
		if _, now, lerr := ch.leader(); lerr != nil {
			err = lerr
		} else if now.Epoch != st.Epoch {
			err = fmt.Errorf("%s: the leader changed (epoch %d, then %d) while %s's disk was full", kind, st.Epoch, now.Epoch, f.ID)
		}
	}
	if ferr := free(); ferr != nil {
		return nil, errors.Join(err, ferr)
	}
	if err != nil {
		return nil, err
	}
	res.more = append(res.more, took("filling the disk", t0.Sub(filling)))
	freed := time.Now()
	if err := ch.caughtUpLog(f); err != nil {
		return []faultResult{res}, err
	}
	res.more = append(res.more, took("caught up once space was back", time.Since(freed)))
	return []faultResult{res}, ch.caughtUp(f)
}

// caughtUpLog waits until m has applied every entry the leader had
// committed when it was called: it takes part in the log again (not
// merely answers in the current epoch).
func (ch *chaos) caughtUpLog(m *testcluster.Master) error {
	ctx, cancel := context.WithTimeout(context.Background(), backWithin)
	defer cancel()
	var target uint64
	last := "no leader"
	if poll.Until(ctx, 50*time.Millisecond, func() bool {
		if ctx.Err() != nil {
			return false
		}
		qctx, qcancel := context.WithTimeout(ctx, time.Second)
		defer qcancel()
		if target == 0 {
			l, _, err := ch.cl.Leader(qctx)
			if err != nil {
				last = err.Error()
				return false
			}
			lf, err := ch.cl.RaftStatus(qctx, l)
			if err != nil {
				last = err.Error()
				return false
			}
			target = lf.CommitIndex
		}
		f, err := ch.cl.RaftStatus(qctx, m)
		if err != nil {
			last = err.Error()
			return false
		}
		last = fmt.Sprintf("%s applied %d of %d (%s)", m.ID, f.AppliedIndex, target, f.State)
		return f.AppliedIndex >= target
	}) {
		return nil
	}
	m.Proc().Signal(syscall.SIGQUIT)
	return fmt.Errorf("%s did not catch up with the log within %s (its goroutines are in its log): %s", m.ID, backWithin, last)
}

// diskFullCounter is the log handler of the workload's clients: it counts
// the answers 503 disk_full they retried.
type diskFullCounter struct{ n *atomic.Int64 }

func (h *diskFullCounter) Enabled(context.Context, slog.Level) bool { return true }

func (h *diskFullCounter) Handle(_ context.Context, r slog.Record) error {
	if r.Message != "retrying" {
		return nil
	}
	r.Attrs(func(a slog.Attr) bool {
		if err, ok := a.Value.Any().(error); ok && a.Key == "err" {
			var se *httpx.StatusError
			if errors.As(err, &se) && se.Code == wire.CodeDiskFull {
				h.n.Add(1)
			}
			return false
		}
		return true
	})
	return nil
}

func (h *diskFullCounter) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *diskFullCounter) WithGroup(string) slog.Handler      { return h }
