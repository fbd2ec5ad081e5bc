package master

import (
	"errors"
	"net/http"
	"syscall"

	"github.com/berth-cluster/berth/internal/httpx"
	"github.com/berth-cluster/berth/persistence"
	"github.com/berth-cluster/berth/wire"
)

// The errors a client sees, each with its wire.ErrorCode.

// notLeader is the answer to a request this master cannot serve: a
// redirect to the leader, or 503 while there is none.
func (c *core) notLeader() error {
	if c.preparing {
		return &httpx.StatusError{Status: http.StatusServiceUnavailable, Code: wire.CodeLeaderPreparing,
			Message: "this master was just elected and is loading its state; retry shortly"}
	}
	return redirectOrNoLeader(c.fx.leaderAddress())
}

// redirectOrNoLeader is the answer of a master that does not lead: a
// redirect to the leader at addr, or 503 when none is known.
func redirectOrNoLeader(addr string) error {
	if addr != "" {
		return &httpx.StatusError{Status: http.StatusTemporaryRedirect, Code: wire.CodeNotLeader, Message: "not the leader", Leader: addr}
	}
	return &httpx.StatusError{Status: http.StatusServiceUnavailable, Code: wire.CodeNoLeader,
		Message: "no leader: no master has a quorum, so changes are refused until one is elected (reads still work)"}
}

// errLeadershipLost answers a request whose write did not commit because
// this master stopped leading meanwhile.
func errLeadershipLost(err error) error {
	return httpx.Coded(http.StatusServiceUnavailable, wire.CodeNotCommitted, "not committed, this master lost leadership (%v); retry against the new leader", err)
}

// persistErr turns a failed write into the error a client sees. Only a
// write that certainly did not commit gets 503 (which clients retry); one
// whose outcome is unknown gets 504, so that a creation is not repeated
// blindly.
func (c *core) persistErr(gen uint64, err error) error {
	switch {
	case errors.Is(err, persistence.ErrOutcomeUnknown):
		return httpx.Coded(http.StatusGatewayTimeout, wire.CodeOutcomeUnknown, "%v: the change may or may not have been made; a retry is safe if the request is idempotent (kills, or a submission with an Idempotency-Key)", err)
	case diskFull(err):
		// Raft's leader stores an entry before it sends it: one it could
		// not store went nowhere. It steps down; another master takes over.
		return httpx.Coded(http.StatusServiceUnavailable, wire.CodeDiskFull, "not committed: this master's disk is full (%v); nothing was written, and a leader that cannot write gives way to a master that can: retry", err)
	case gen != c.gen || !c.leading() || errors.Is(err, persistence.ErrNotLeader):
		return errLeadershipLost(err)
	}
	return httpx.Coded(http.StatusServiceUnavailable, wire.CodeNotCommitted, "could not persist the change: %v", err)
}

// diskFull reports whether err is a write that failed for want of space.
func diskFull(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}

// notFound is the 404 for an unknown app, driver, executor or worker, with
// its code.
func notFound(kind, id string) error {
	code := map[string]wire.ErrorCode{
		"application": wire.CodeUnknownApp, "driver": wire.CodeUnknownDriver,
		"executor": wire.CodeUnknownExecutor, "worker": wire.CodeUnknownWorker,
	}[kind]
	return httpx.Coded(http.StatusNotFound, code, "unknown %s %q", kind, id)
}

// conflict is a 409 for a change the entity's state does not allow.
func conflict(format string, args ...any) error {
	return httpx.Coded(http.StatusConflict, wire.CodeWrongState, format, args...)
}

// ended is the 409 for a change of an app or driver that has ended.
func ended(kind, id string) error {
	return httpx.Coded(http.StatusConflict, wire.CodeEnded, "%s %s has ended", kind, id)
}

// logPersistFailure is the continuation of writes nobody waits for.
func (c *core) logPersistFailure(what string) func(error) {
	return func(err error) {
		switch {
		case err == nil:
		case !c.leading() && (errors.Is(err, persistence.ErrNotLeader) || hasCode(err, wire.CodeNotCommitted)):
			// Its leadership ended first (stepping down, stopping): the
			// write was not made, and the next leader starts from what
			// was committed. Nothing failed here.
			c.log.Info("write not made: this master no longer leads", "what", what, "err", err)
		default:
			c.log.Error("write failed", "what", what, "err", err)
		}
	}
}

// appGone is the answer to a write of an app that is no longer active here.
func (c *core) appGone(a *appInfo) error {
	if !c.leading() {
		return c.notLeader()
	}
	return ended("application", a.rec.ID)
}

func (c *core) driverGone(d *driverInfo) error {
	if !c.leading() {
		return c.notLeader()
	}
	return ended("driver", d.rec.ID)
}

// hasCode reports whether err is an answer with code.
func hasCode(err error, code wire.ErrorCode) bool {
	var se *httpx.StatusError
	return errors.As(err, &se) && se.Code == code
}
