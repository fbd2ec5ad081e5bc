package persistence

import (
	"errors"
	"io"
	"net"
	"syscall"

	"github.com/hashicorp/raft"
)

// redialTransport is Raft's network transport with one repair. The
// transport keeps up to maxPool connections to each peer; when the peer's
// process restarts, those connections are dead (the old process's sockets
// were closed) but stay pooled, and the next RPC over one fails at once
// with EOF or a reset. For a RequestVote that loses the election round
// (seconds), for a handover's TimeoutNow the handover. So an RPC that
// fails that way is sent again at once, over the next pooled connection or
// a fresh one: at most maxPool+1 attempts, which empties a pool of dead
// connections. Each of these RPCs is safe to repeat: Raft's peers answer a
// repeated AppendEntries, vote or TimeoutNow as they answered the first,
// and the process that may have seen the first attempt is gone.
//
// InstallSnapshot is left as it is: a snapshot is sent on a connection of
// its own. AppendEntriesPipeline is turned off: after a "peer has newer
// term" answer, hashicorp/raft's pipeline can leave a replication
// goroutine blocked in netPipeline.AppendEntries for good, and then the
// leader silently stops replicating to that follower and a SIGTERM'd
// master never finishes shutting down (seen in the fault suite; also
// grafana/pyroscope#5518). Plain AppendEntries, one in flight per
// follower, costs a little throughput under heavy write load.
type redialTransport struct {
	*raft.NetworkTransport
}

// AppendEntriesPipeline tells Raft to replicate without a pipeline.
func (t redialTransport) AppendEntriesPipeline(raft.ServerID, raft.ServerAddress) (raft.AppendPipeline, error) {
	return nil, raft.ErrPipelineReplicationNotSupported
}

// maxPool is the connections the transport pools per peer.
const maxPool = 3

func (t redialTransport) AppendEntries(id raft.ServerID, target raft.ServerAddress, args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) error {
	return redial(func() error { return t.NetworkTransport.AppendEntries(id, target, args, resp) })
}

func (t redialTransport) RequestVote(id raft.ServerID, target raft.ServerAddress, args *raft.RequestVoteRequest, resp *raft.RequestVoteResponse) error {
	return redial(func() error { return t.NetworkTransport.RequestVote(id, target, args, resp) })
}

func (t redialTransport) RequestPreVote(id raft.ServerID, target raft.ServerAddress, args *raft.RequestPreVoteRequest, resp *raft.RequestPreVoteResponse) error {
	return redial(func() error { return t.NetworkTransport.RequestPreVote(id, target, args, resp) })
}

func (t redialTransport) TimeoutNow(id raft.ServerID, target raft.ServerAddress, args *raft.TimeoutNowRequest, resp *raft.TimeoutNowResponse) error {
	return redial(func() error { return t.NetworkTransport.TimeoutNow(id, target, args, resp) })
}

// redial runs rpc until it succeeds, fails otherwise than on a dead
// connection, or has been tried maxPool+1 times.
func redial(rpc func() error) error {
	var err error
	for range maxPool + 1 {
		if err = rpc(); err == nil || !deadConnection(err) {
			return err
		}
	}
	return err
}

// deadConnection reports whether err is what an RPC over a connection
// whose other end has gone gets: EOF, a reset, a broken pipe. Timeouts and
// refused dials are not: the peer is slow or down, and Raft's own timers
// deal with that.
func deadConnection(err error) bool {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return false
	}
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) || errors.Is(err, net.ErrClosed)
}
