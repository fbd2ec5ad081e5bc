package persistence

// The Raft node as the master uses it: the Engine (writes through the log,
// the state as applied here) and this master's leadership, for the
// master's writer and election agent.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"syscall"
	"time"

	"github.com/hashicorp/raft"
)

// timeoutOf turns a context deadline into the timeout hashicorp/raft wants.
func timeoutOf(ctx context.Context) time.Duration {
	if d, ok := ctx.Deadline(); ok {
		return max(time.Until(d), time.Millisecond)
	}
	return 10 * time.Second
}

// await waits for f, or until ctx ends. hashicorp/raft's futures take no
// context (a timeout, where they take one, only bounds the wait to enqueue
// the operation), so one left behind resolves in the background; all do
// eventually, on shutdown at the latest.
func await(ctx context.Context, f raft.Future) error {
	done := make(chan error, 1)
	go func() { done <- f.Error() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Write commits cmds as one log entry and returns once a quorum has it and
// this master applied it.
func (r *Raft) Write(ctx context.Context, cmds []Command) error {
	data, err := Encode(cmds)
	if err != nil {
		return err
	}
	f := r.raft.Apply(data, timeoutOf(ctx))
	if err := f.Error(); err != nil {
		switch {
		case errors.Is(err, raft.ErrLeadershipLost):
			// hashicorp/raft: the entry may survive into the next term.
			return fmt.Errorf("raft apply: %w: %w", ErrOutcomeUnknown, err)
		case errors.Is(err, raft.ErrNotLeader), errors.Is(err, raft.ErrLeadershipTransferInProgress), errors.Is(err, raft.ErrEnqueueTimeout):
			return fmt.Errorf("raft apply: %w: %w", ErrNotLeader, err)
		}
		return fmt.Errorf("raft apply: %w", err)
	}
	if err, ok := f.Response().(error); ok && err != nil {
		return err
	}
	return nil
}

func (r *Raft) Barrier(ctx context.Context) error {
	if err := r.raft.Barrier(timeoutOf(ctx)).Error(); err != nil {
		return fmt.Errorf("raft barrier: %w", err)
	}
	return nil
}

// Load returns a copy of the state as applied on this master.
func (r *Raft) Load(context.Context) (*State, error) { return r.fsm.snapshotState(), nil }

// LoadApplied is Load with the index and term of the last log entry the
// copy includes. Call Barrier first for a state that holds every write
// committed before the call.
func (r *Raft) LoadApplied(context.Context) (*State, uint64, uint64, error) {
	r.fsm.mu.RLock()
	s, index, term := r.fsm.state.Clone(), r.fsm.index, r.fsm.term
	r.fsm.mu.RUnlock()
	if index == 0 {
		// Nothing applied since the state came from a snapshot: it is
		// that snapshot's.
		stats := r.raft.Stats()
		index, _ = strconv.ParseUint(stats["last_snapshot_index"], 10, 64)
		term, _ = strconv.ParseUint(stats["last_snapshot_term"], 10, 64)
	}
	return s, index, term, nil
}

// Read runs f on the FSM's state under its read lock.
func (r *Raft) Read(_ context.Context, f func(*State)) error {
	r.fsm.mu.RLock()
	defer r.fsm.mu.RUnlock()
	f(r.fsm.state)
	return nil
}

// VerifyLeader confirms with a quorum that this master still leads. It
// fails at once on a master that knows it no longer does, and otherwise
// when ctx ends first.
func (r *Raft) VerifyLeader(ctx context.Context) error {
	f := r.raft.VerifyLeader()
	done := make(chan error, 1)
	go func() { done <- f.Error() }()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("verifying leadership: %w: %w", ErrNotLeader, err)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("verifying leadership: %w", ctx.Err())
	}
}

// LeaseTimeout is how long a verified leadership stays certain: no other
// master can be elected while a quorum has heard from this one within the
// heartbeat timeout (followers refuse to vote while they know a leader), so
// half of it leaves a wide margin.
func (r *Raft) LeaseTimeout() time.Duration { return raftConfig(r.cfg).HeartbeatTimeout / 2 }

// LeadershipChanges delivers true when this master becomes the Raft leader
// and false when it stops being one, every change, in order.
func (r *Raft) LeadershipChanges() <-chan bool { return r.notify }

// LeaderID is the id of the current leader, "" when there is none.
//
// A follower that has not heard from its leader for three of the leader's
// heartbeat intervals says there is none: the leader is dead, frozen or
// cut off, and an election is coming. Raft itself believes in the leader
// until its heartbeat timeout (1 to 2 s); naming it meanwhile would send
// clients to a master that cannot answer.
func (r *Raft) LeaderID() string {
	_, id := r.raft.LeaderWithID()
	if id == "" || id == raft.ServerID(r.cfg.ID) {
		return string(id)
	}
	if time.Since(r.raft.LastContact()) > r.silentLeaderAfter() {
		return ""
	}
	return string(id)
}

// silentLeaderAfter is how long without a word from the leader makes a
// follower stop naming it: three heartbeats (the leader sends one every
// tenth of the heartbeat timeout).
func (r *Raft) silentLeaderAfter() time.Duration {
	return 3 * raftConfig(r.cfg).HeartbeatTimeout / 10
}

// IsLeader reports whether this master is the Raft leader.
func (r *Raft) IsLeader() bool { return r.raft.State() == raft.Leader }

// minFreeBytes: below this much free space in its directory, the log is
// full for Raft's purposes (an entry and bbolt's pages need a few KiB;
// what is left is not worth winning an election for).
const minFreeBytes = 1 << 20

// DiskFull reports whether the Raft directory's file system has less
// than minFreeBytes free for this process.
func (r *Raft) DiskFull() bool {
	var fs syscall.Statfs_t
	if err := syscall.Statfs(r.cfg.Dir, &fs); err != nil {
		return false // not known: try, and let a failed write say so
	}
	return fs.Bavail*uint64(fs.Bsize) < minFreeBytes
}

// TransferLeadership hands leadership to another voter and waits for it,
// or until ctx ends. hashicorp/raft cannot cancel a transfer: when ctx ends
// first, the transfer goes on in the background and may still complete
// (this master then steps down), or gives up by itself after an election
// timeout.
func (r *Raft) TransferLeadership(ctx context.Context) error {
	if err := await(ctx, r.raft.LeadershipTransfer()); err != nil {
		return fmt.Errorf("transferring leadership: %w", err)
	}
	return nil
}
