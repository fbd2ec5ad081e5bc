package client

import (
	"context"
	"fmt"
	"io"

	"github.com/berth-cluster/berth/wire"
)

// SaveSnapshot returns a snapshot file of the cluster's state, taken by
// the leader once every write committed before the call is applied
// (package persistence/snapfile reads it).
func (c *Client) SaveSnapshot(ctx context.Context) ([]byte, error) {
	e := wire.MasterAPI.SnapshotSave.Endpoint
	r := on(e, nil)
	r.leaderOnly = true
	resp, cancel, err := c.roundTrip(ctx, r, false)
	if err != nil {
		return nil, fmt.Errorf("snapshot save: %w", err)
	}
	defer cancel()
	defer resp.Body.Close()
	// The state may be up to MaxSnapshotBytes; the envelope a little more.
	data, err := io.ReadAll(io.LimitReader(resp.Body, wire.MaxSnapshotBytes+1<<20))
	if err != nil {
		return nil, fmt.Errorf("snapshot save: reading the answer of %s: %w", e.Pattern, err)
	}
	return data, nil
}

// RestoreSnapshot sends a snapshot file to the leader: with dryRun, to
// learn what restoring it would do (nothing changes); without, to replace
// the cluster's state with it. A restore is not repeated after an attempt
// that may have reached a master (ErrUnknownOutcome): look at the
// cluster, then restore again if it was not restored.
func (c *Client) RestoreSnapshot(ctx context.Context, file []byte, dryRun bool) (wire.Restore, error) {
	var out wire.Restore
	r := on(wire.MasterAPI.SnapshotRestore.Endpoint, wire.RestoreRequest{Snapshot: file, DryRun: dryRun})
	r.leaderOnly, r.once = true, !dryRun
	if err := c.call(ctx, r, &out); err != nil {
		return out, fmt.Errorf("snapshot restore: %w", err)
	}
	return out, nil
}

// RaftPeers lists the masters of the Raft configuration, as the first
// master that answers knows it (a follower too: it answers without a
// leader), each asked for its own figures.
func (c *Client) RaftPeers(ctx context.Context) (wire.RaftPeers, error) {
	var out wire.RaftPeers
	if err := c.call(ctx, on(wire.MasterAPI.RaftPeers.Endpoint, nil), &out); err != nil {
		return out, fmt.Errorf("raft peers: %w", err)
	}
	return out, nil
}

// RemoveRaftPeer asks the leader to remove a master (not itself) from the
// Raft configuration; it answers with the peers after the change.
func (c *Client) RemoveRaftPeer(ctx context.Context, id string) (wire.RaftPeers, error) {
	var out wire.RaftPeers
	if err := c.call(ctx, on(wire.MasterAPI.RemoveRaftPeer.Endpoint, nil, id), &out); err != nil {
		return out, fmt.Errorf("remove raft peer %s: %w", id, err)
	}
	return out, nil
}
