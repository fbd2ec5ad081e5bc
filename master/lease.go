package master

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/berth-cluster/berth/internal/httpx"
	"github.com/berth-cluster/berth/internal/poll"
	"github.com/berth-cluster/berth/wire"
)

// leaderLease decides whether this master may answer as the leader now.
//
// A Raft leader does not know it was deposed until it hears so: one frozen
// by SIGSTOP, or cut off from the others, would otherwise answer from a
// state that a new leader has already moved past. So before a request is
// answered as the leader's view, leadership is confirmed: a quorum answered
// a VerifyLeader that began less than the lease ago. No other master can
// be elected within that time (followers refuse to vote while they heard
// from a leader within their heartbeat timeout, and the lease is half of
// it), so everything acknowledged anywhere before the request arrived is in
// this master's state. A background refresh keeps the lease fresh while
// this master leads, so a read usually costs an atomic load; once the lease
// lapses, a read waits for a fresh VerifyLeader.
//
// A master handing leadership over (SIGTERM) gives up its lease first: the
// transfer may elect the other master at once.
type leaderLease struct {
	verify   func(context.Context) error // nil for a lone master, which leads while it runs
	duration time.Duration

	mu          sync.Mutex
	until       time.Time // monotonic; zero when not confirmed
	handingOver atomic.Bool
	leading     atomic.Bool // the loop's view: this master leads (refresh runs)
}

// newLeaderLease uses repl's leader verification (nil: a lone master).
func newLeaderLease(repl Replication) *leaderLease {
	l := &leaderLease{}
	if repl != nil {
		l.verify, l.duration = repl.VerifyLeader, repl.LeaseTimeout()
	}
	return l
}

var errHandingOver = &httpx.StatusError{Status: http.StatusServiceUnavailable, Code: wire.CodeNoLeader,
	Message: "this master is handing leadership over; retry against the new leader"}

// fresh reports whether leadership is confirmed now, without asking.
func (l *leaderLease) fresh() bool {
	if l.handingOver.Load() {
		return false
	}
	if l.verify == nil {
		return true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return time.Now().Before(l.until)
}

// confirm returns nil once leadership is confirmed: at once while the lease
// is fresh, else after a VerifyLeader. The error says why not.
func (l *leaderLease) confirm(ctx context.Context) error {
	if l.handingOver.Load() {
		return errHandingOver
	}
	if l.fresh() {
		return nil
	}
	return l.renew(ctx)
}

// renew runs a VerifyLeader and, if a quorum confirms, extends the lease
// from the moment the verification began.
func (l *leaderLease) renew(ctx context.Context) error {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, 4*l.duration)
	defer cancel()
	if err := l.verify(ctx); err != nil {
		return err
	}
	if l.handingOver.Load() {
		return errHandingOver
	}
	l.mu.Lock()
	if until := start.Add(l.duration); until.After(l.until) {
		l.until = until
	}
	l.mu.Unlock()
	return nil
}

// drop forgets the lease: leadership ended.
func (l *leaderLease) drop() {
	l.leading.Store(false)
	l.mu.Lock()
	l.until = time.Time{}
	l.mu.Unlock()
}

// refresh keeps the lease fresh while the master leads, until ctx ends.
func (l *leaderLease) refresh(ctx context.Context) {
	if l.verify == nil {
		return
	}
	for poll.Sleep(ctx, l.duration/3) {
		if l.leading.Load() && !l.handingOver.Load() {
			_ = l.renew(ctx) // a failure lets the lease lapse
		}
	}
}

// notConfirmed is the answer to a request this master could not confirm it
// leads for: a redirect to the leader Raft knows, or a 503.
// errLeaseLapsed: the lease ran out between the confirmation and the answer.
var errLeaseLapsed = fmt.Errorf("the leader lease lapsed while the answer was made (this master was paused or slowed)")

// stillLeading passes a read the loop answered as the leader's only if the
// lease still holds once it is answered: a master frozen (SIGSTOP, a long
// pause) between its confirmation and its answer would otherwise answer
// from a state that a master elected meanwhile has moved past: two leaders
// seen at once. (Writes need no such check: they are answered once
// committed, which a deposed master cannot do.)
func stillLeading[T any](m *Master, v T, err error) (T, error) {
	if err == nil && m.lease.leading.Load() && !m.lease.fresh() {
		var zero T
		return zero, m.notConfirmed(errLeaseLapsed)
	}
	return v, err
}

func (m *Master) notConfirmed(err error) error {
	if se, ok := err.(*httpx.StatusError); ok {
		return se
	}
	if addr := m.leaderAddress(); addr != "" {
		return redirectOrNoLeader(addr)
	}
	return &httpx.StatusError{Status: http.StatusServiceUnavailable, Code: wire.CodeNoLeader,
		Message: fmt.Sprintf("this master could not confirm it still leads (%v); retry, another master may lead", err)}
}
