package master

// An operator's snapshots (berth operator snapshot save, restore): the
// leader's state as a file, and replacing the state with a file's through
// the log (persistence.TypeRestore), after which the leader starts its
// leadership over on the new state, as a new leader would: workers are
// told, answer with what they run, and are told to kill what the restored
// state does not know (worker_state.go).

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/berth-cluster/berth/admission"
	"github.com/berth-cluster/berth/internal/httpx"
	"github.com/berth-cluster/berth/internal/version"
	"github.com/berth-cluster/berth/persistence"
	"github.com/berth-cluster/berth/persistence/snapfile"
	"github.com/berth-cluster/berth/wire"
)

// snapshotTransfer bounds reading a restore's request and writing a
// save's answer, in place of the server's shorter timeouts.
const snapshotTransfer = 10 * time.Minute

// saveSnapshot answers GET /v1/operator/snapshot with a snapshot file of
// the leader's state.
func (m *Master) saveSnapshot(w http.ResponseWriter, r *http.Request) {
	data, info, err := m.takeSnapshot(r.Context())
	if err != nil {
		respond(w, r, nil, err)
		return
	}
	_ = httpx.WriteWithin(w, snapshotTransfer)
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.Itoa(len(data)))
	w.WriteHeader(http.StatusOK)
	if _, err := w.Write(data); err != nil {
		m.log.Warn("sending a snapshot failed", "index", info.Index, "err", err)
	}
}

// takeSnapshot makes a snapshot file of the state, on the leader only:
// once every write committed before the call is applied here (a Barrier,
// which only a leader can commit), the state is copied with the index and
// term of the last entry it includes.
func (m *Master) takeSnapshot(ctx context.Context) ([]byte, wire.SnapshotInfo, error) {
	if err := m.mustLead(ctx); err != nil {
		return nil, wire.SnapshotInfo{}, err
	}
	if err := m.engine.Barrier(ctx); err != nil {
		return nil, wire.SnapshotInfo{}, httpx.Coded(http.StatusServiceUnavailable, wire.CodeNoLeader,
			"no snapshot: this master could not confirm that it applied every committed write (%v); retry, on the leader", err)
	}
	var s *persistence.State
	var index, term uint64
	var err error
	if m.repl != nil {
		s, index, term, err = m.repl.LoadApplied(ctx)
	} else {
		s, err = m.engine.Load(ctx)
	}
	if err != nil {
		return nil, wire.SnapshotInfo{}, fmt.Errorf("reading the state: %w", err)
	}
	build := version.Get()
	meta := snapfile.Meta{Index: index, Term: term, Time: time.Now().UTC(), Version: build.Version, Commit: build.Commit, Master: m.cfg.ID}
	data, _, err := persistence.EncodeSnapshotFile(s, meta)
	if err != nil {
		return nil, wire.SnapshotInfo{}, fmt.Errorf("writing the snapshot: %w", err)
	}
	meta, counts, _, err := persistence.DecodeSnapshotFile(bytes.NewReader(data), wire.MaxSnapshotBytes)
	if err != nil {
		// What this master writes, it must read back: a state it cannot
		// is a bug, and must not become an operator's backup.
		return nil, wire.SnapshotInfo{}, fmt.Errorf("the snapshot just written does not read back: %w", err)
	}
	info := snapshotInfo(meta, counts)
	m.log.Info("snapshot taken for an operator", "index", index, "term", term, "bytes", len(data), "sha256", info.SHA256)
	return data, info, nil
}

// mustLead answers nil on the leader, else the redirect or 503 of a
// master that does not lead.
func (m *Master) mustLead(ctx context.Context) error {
	_, err := query(ctx, m, func(c *core) (wire.None, error) {
		if !c.leading() {
			return wire.None{}, c.notLeader()
		}
		return wire.None{}, nil
	})
	return err
}

func snapshotInfo(meta snapfile.Meta, counts snapfile.Counts) wire.SnapshotInfo {
	return wire.SnapshotInfo{Format: meta.Format, Index: meta.Index, Term: meta.Term, Time: meta.Time, Version: meta.Version,
		Commit: meta.Commit, Master: meta.Master, Size: meta.Size, SHA256: meta.SHA256, Counts: counts}
}

// restoreSnapshot serves POST /v1/operator/snapshot/restore: the file is
// read and checked whole (a bad one is refused, 400 bad_snapshot, and
// nothing changes); a dry run answers what a restore would do; a restore
// replaces the state and answers once that is committed.
func (m *Master) restoreSnapshot(w http.ResponseWriter, r *http.Request) {
	api := wire.MasterAPI.SnapshotRestore
	r = r.WithContext(audited(r.Context(), api.Endpoint, ""))
	fail := func(err error) {
		m.auditRefusal(r.Context(), err)
		respond(w, r, nil, err)
	}
	_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(snapshotTransfer))
	var req wire.RestoreRequest
	if err := decodeRestore(w, r, &req); err != nil {
		fail(err)
		return
	}
	meta, counts, s, err := persistence.DecodeSnapshotFile(bytes.NewReader(req.Snapshot), wire.MaxSnapshotBytes)
	if err != nil {
		fail(httpx.Coded(http.StatusBadRequest, wire.CodeBadSnapshot, "snapshot refused, nothing changed: %v", err))
		return
	}
	if err := admission.RestoredState(s); err != nil {
		fail(httpx.Coded(http.StatusBadRequest, wire.CodeBadSnapshot, "snapshot refused, nothing changed: %v", err))
		return
	}
	info := snapshotInfo(meta, counts)
	if tag := auditOf(r.Context()); tag != nil {
		tag.target = fmt.Sprintf("snapshot index %d term %d sha256 %.12s", meta.Index, meta.Term, meta.SHA256)
	}
	var out wire.Restore
	if req.DryRun {
		out, err = query(r.Context(), m, func(c *core) (wire.Restore, error) {
			if !c.leading() {
				return wire.Restore{}, c.notLeader()
			}
			return c.restorePlan(s, info), nil
		})
	} else {
		out, err = call(r.Context(), m, func(c *core, r reply[wire.Restore]) { c.restoreState(s, meta, info, r) })
	}
	if err != nil {
		m.auditRefusal(r.Context(), err)
	}
	respond(w, r, out, err)
}

// decodeRestore reads a restore's request strictly, as httpx.DecodeJSON
// does, but up to a snapshot's size (base64 in JSON: a third larger).
func decodeRestore(w http.ResponseWriter, r *http.Request, req *wire.RestoreRequest) error {
	const limit = wire.MaxSnapshotBytes/3*4 + 1<<20
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, limit))
	dec.DisallowUnknownFields()
	if err := dec.Decode(req); err != nil {
		var tooBig *http.MaxBytesError
		switch {
		case errors.As(err, &tooBig):
			return httpx.Coded(http.StatusRequestEntityTooLarge, wire.CodeTooLarge, "request body larger than %d bytes", limit)
		case errors.Is(err, io.EOF):
			return badRequest("empty request body, want JSON")
		}
		return badRequest("malformed JSON: %v", err)
	}
	if dec.More() {
		return badRequest("malformed JSON: data after the object")
	}
	if len(req.Snapshot) == 0 {
		return httpx.Coded(http.StatusBadRequest, wire.CodeBadSnapshot, "snapshot refused, nothing changed: the request holds no snapshot (field snapshot)")
	}
	return nil
}

// restorePlan says what replacing the state with s would do to what runs
// now, by the leader's live view.
func (c *core) restorePlan(s *persistence.State, info wire.SnapshotInfo) wire.Restore {
	out := wire.Restore{Snapshot: info, KillExecutors: []wire.ExecutorPlace{}, KillDrivers: []wire.DriverPlace{},
		LostExecutors: []wire.ExecutorPlace{}, GoneApps: []string{}, GoneDrivers: []string{}}
	for _, a := range c.appOrder {
		if rec := s.Apps[a.rec.ID]; rec == nil || rec.Finished() {
			out.GoneApps = append(out.GoneApps, a.rec.ID)
		}
		for _, e := range a.executors {
			if e.launching {
				continue // its placement is not committed, and will not be
			}
			if rec := s.Executors[persistence.ExecutorKey(a.rec.ID, e.id)]; rec == nil || rec.WorkerID != e.worker.rec.ID {
				out.KillExecutors = append(out.KillExecutors, wire.ExecutorPlace{AppID: a.rec.ID, ExecutorID: e.id, WorkerID: e.worker.rec.ID})
			}
		}
	}
	for _, rec := range s.Executors {
		var e *executorInfo
		if a := c.apps[rec.AppID]; a != nil {
			e = a.executors[rec.ID]
		}
		if e == nil || e.launching || e.worker.rec.ID != rec.WorkerID {
			out.LostExecutors = append(out.LostExecutors, wire.ExecutorPlace{AppID: rec.AppID, ExecutorID: rec.ID, WorkerID: rec.WorkerID})
		}
	}
	for _, d := range sortedDrivers(c.drivers) {
		rec := s.Drivers[d.rec.ID]
		if rec == nil || rec.Finished() {
			out.GoneDrivers = append(out.GoneDrivers, d.rec.ID)
		}
		if d.worker != nil && !d.launching && (rec == nil || rec.Finished() || rec.WorkerID != d.worker.rec.ID) {
			out.KillDrivers = append(out.KillDrivers, wire.DriverPlace{DriverID: d.rec.ID, WorkerID: d.worker.rec.ID})
		}
	}
	byExec := func(a, b wire.ExecutorPlace) int {
		if a.AppID != b.AppID {
			return strings.Compare(a.AppID, b.AppID)
		}
		return a.ExecutorID - b.ExecutorID
	}
	slices.SortFunc(out.KillExecutors, byExec)
	slices.SortFunc(out.LostExecutors, byExec)
	slices.Sort(out.GoneApps)
	return out
}

// restoreState replaces the state with s through the log, then starts the
// leadership over on it. Before the write, everything this leadership
// had in hand is dropped, as at a leadership change: commands queued for
// workers, writes not yet sent (refused as stale, so none lands after the
// restore), event streams (clients reconnect and find the restored
// state). Once the restore commits (or fails: the state is then as it
// was), the leader prepares as a new leader does (Barrier, epoch bump,
// state read) and recovers from the state read: workers are told and
// answer with what they run, and what the restored state does not know is
// killed; a worker the restored state does not know is asked to register
// again, and does the same.
func (c *core) restoreState(s *persistence.State, from snapfile.Meta, info wire.SnapshotInfo, r reply[wire.Restore]) {
	if !c.leading() {
		r.fail(c.notLeader())
		return
	}
	plan := c.restorePlan(s, info)
	cmds := c.withAudit([]persistence.Command{persistence.Restore(persistence.RestoreRecord{State: s, From: from})})
	gen := c.restartLeadership("restoring a snapshot")
	c.log.Warn("replacing the state with a snapshot's", "index", from.Index, "term", from.Term, "taken", from.Time,
		"version", from.Version, "sha256", from.SHA256, "killing_executors", len(plan.KillExecutors), "killing_drivers", len(plan.KillDrivers))
	c.fx.persist(cmds, func(err error) {
		if gen == c.gen {
			c.fx.prepareLeadership(gen) // the state as it is now, restored or not
		}
		if err != nil {
			c.log.Error("restoring a snapshot failed", "err", err)
			r.fail(restoreErr(err))
			return
		}
		c.log.Warn("state replaced by the snapshot's; starting the leadership over", "index", from.Index, "term", from.Term)
		plan.Restored = true
		r(plan, nil)
	})
}

// restoreErr is the answer to a restore whose write failed.
func restoreErr(err error) error {
	switch {
	case errors.Is(err, persistence.ErrOutcomeUnknown):
		return httpx.Coded(http.StatusGatewayTimeout, wire.CodeOutcomeUnknown, "%v: the state may or may not have been replaced: look (berth status), and restore again if it was not", err)
	case diskFull(err):
		return httpx.Coded(http.StatusServiceUnavailable, wire.CodeDiskFull, "not restored: this master's disk is full (%v)", err)
	case errors.Is(err, persistence.ErrNotLeader):
		return errLeadershipLost(err)
	}
	return httpx.Coded(http.StatusServiceUnavailable, wire.CodeNotCommitted, "not restored: %v", err)
}

// restartLeadership ends what this leadership has in hand and starts it
// over, still the leader: as revoked and elected would, without a word to
// the election. It returns the new generation; the caller then has
// prepareLeadership run for it.
func (c *core) restartLeadership(why string) uint64 {
	c.gen++
	c.status, c.preparing = wire.MasterRecovering, true
	c.leaderSince = c.now()
	c.fx.dropOutbound()
	for _, a := range c.appOrder {
		c.closeSubscribers(a)
	}
	c.reset()
	c.log.Warn("starting the leadership over", "why", why, "gen", c.gen)
	return c.gen
}
