package persistence

// An operator's snapshots (berth operator snapshot save, restore): the
// file that holds one (package snapfile's envelope around the state's
// JSON, as a Raft snapshot holds it), and the command that replaces the
// cluster's state with one, through the log like every change.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"

	"github.com/berth-cluster/berth/persistence/snapfile"
	"github.com/berth-cluster/berth/wire"
)

// RestoreRecord is an operator's restore: the state to put in place of the
// cluster's, and where it comes from (for the logs).
type RestoreRecord struct {
	State *State `json:"state"`
	// From is the snapshot's metadata: its index, term and time in the
	// cluster it was taken from.
	From snapfile.Meta `json:"from"`
}

// restore replaces the state with the restored one, but for what belongs
// to this cluster rather than to its contents:
//   - the records of the kinds keptByRestore (recordKinds): the masters,
//     whose API addresses are this cluster's, whatever the snapshot's
//     cluster had;
//   - the audit log: it records what was done to this cluster, the
//     restore included, and a restore does not rewrite it;
//   - the web UI's signed-out sessions, merged: a session signed out here
//     stays refused;
//   - the epoch and the next app and driver numbers go no lower than
//     they were: workers refuse an older epoch, and an id this cluster
//     handed out is never handed out again.
//
// Every record either state holds is reported to touched, so that an
// engine that keeps records one by one (Bolt) rewrites them all.
func (s *State) restore(c Command, touched func(Key)) {
	in := c.Restore.State
	n := in.Clone()
	n.Epoch = max(s.Epoch, in.Epoch)
	n.NextAppNumber = max(s.NextAppNumber, in.NextAppNumber)
	n.NextDriverNumber = max(s.NextDriverNumber, in.NextDriverNumber)
	n.Audit, n.AuditCount, n.auditBytes, n.auditCounted = s.Audit, s.AuditCount, s.auditBytes, s.auditCounted
	n.EndedSessions = mergeSessions(s.EndedSessions, in.EndedSessions)
	n.makeMaps() // a valid state may lack an optional kind's map
	for _, k := range recordKinds {
		k.restored(s, n, touched)
	}
	*s = *n
}

// touchAll tells touched of every key of a and b.
func touchAll[V any](b Bucket, old, now map[string]V, touched func(Key)) {
	for k := range old {
		touched(Key{b, k})
	}
	for k := range now {
		if _, ok := old[k]; !ok {
			touched(Key{b, k})
		}
	}
}

// mergeSessions is the union of two sets of signed-out sessions, each kept
// until the later of its expiries.
func mergeSessions(a, b map[string]int64) map[string]int64 {
	if len(a) == 0 && len(b) == 0 {
		return nil
	}
	out := maps.Clone(a)
	if out == nil {
		out = map[string]int64{}
	}
	for id, exp := range b {
		out[id] = max(out[id], exp)
	}
	return out
}

// EncodeSnapshotFile makes an operator's snapshot file of s with meta
// (snapfile.Write sets its format and size) and returns it with its
// checksum.
func EncodeSnapshotFile(s *State, meta snapfile.Meta) ([]byte, string, error) {
	body, err := json.Marshal(s)
	if err != nil {
		return nil, "", fmt.Errorf("encoding the state: %w", err)
	}
	return snapfile.Encode(meta, body)
}

// DecodeSnapshotFile reads an operator's snapshot file whole and checks
// it: its envelope (snapfile.Read: foreign, newer, truncated or corrupt),
// then the state inside, decoded and checked as a Raft snapshot's is (a
// state that breaks an invariant is corrupt). A body over maxSize bytes is
// refused unread. The counts are of the state as the file holds it.
func DecodeSnapshotFile(r io.Reader, maxSize int64) (snapfile.Meta, snapfile.Counts, *State, error) {
	meta, body, err := snapfile.Read(r, maxSize)
	if err != nil {
		return meta, snapfile.Counts{}, nil, err
	}
	counts, err := snapfile.Count(body) // one JSON object, nothing after it
	if err != nil {
		return meta, counts, nil, err
	}
	if err := strictState(body); err != nil {
		return meta, counts, nil, fmt.Errorf("%w: %w", snapfile.ErrCorrupt, err)
	}
	s, err := decodeSnapshot(bytes.NewReader(body))
	if err != nil {
		return meta, counts, nil, fmt.Errorf("%w: %w", snapfile.ErrCorrupt, err)
	}
	if _, set := s.Queues[wire.DefaultQueue]; !set {
		// The default queue is there, set or not: berth queue list shows
		// it, and so does the count ("queues: 2" beside a list of 3).
		counts.Queues++
	}
	return meta, counts, s, nil
}

// strictState refuses an operator's file whose state is not an object of
// the state's own fields: null, or a field this release does not know
// (older releases' files hold only fields it knows; a newer format is
// refused by the envelope). Otherwise a file of something else decodes
// as an empty state, and a forced restore of it would wipe the cluster.
func strictState(body []byte) error {
	if t := bytes.TrimSpace(body); len(t) == 0 || t[0] != '{' {
		return errors.New("the state is not a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	var s State
	if err := dec.Decode(&s); err != nil {
		return fmt.Errorf("the state does not decode strictly: %w", err)
	}
	return nil
}
