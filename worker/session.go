package worker

import (
	"context"
	"sync"
)

// session is the worker's registration: which master it is registered with,
// if any. The master loop owns registration; the reporter and the command
// handlers only read it, or tell the master loop to look for the leader again
// (lost, reconnect).
type session struct {
	mu     sync.Mutex
	master string        // the master we are registered with; "" while not
	gen    uint64        // bumped at every registration
	ready  chan struct{} // closed while registered
	// ctx lives as long as the registration: requests to its master use
	// it, so that a new leader's reconnect (or any loss) cancels whatever
	// is still waiting on the old one, a frozen master included.
	ctx    context.Context
	cancel context.CancelFunc
	// relook asks the master loop to register again, at hint first if set.
	relook bool
	hint   string
	wake   chan struct{} // capacity 1: a relook is pending
	// relooked is cancelled, and replaced, at every relook request: a
	// registration attempt in flight gives up on it.
	relooked     context.Context
	signalRelook context.CancelFunc
}

func newSession() *session {
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // not registered yet
	s := &session{ready: make(chan struct{}), wake: make(chan struct{}, 1), ctx: ctx, cancel: cancel}
	s.relooked, s.signalRelook = context.WithCancel(context.Background())
	return s
}

// relookSignal returns a context cancelled at the next relook request.
func (s *session) relookSignal() context.Context {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.relooked
}

// current returns the master we are registered with, the registration's
// generation and its context, or "" and a channel closed at the next
// registration.
func (s *session) current() (master string, gen uint64, ready <-chan struct{}, ctx context.Context) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.master != "" {
		return s.master, s.gen, nil, s.ctx
	}
	return "", s.gen, s.ready, s.ctx
}

// registered records a successful registration (with the latest state sent).
// Invariant: ready is closed exactly while master is set.
func (s *session) registered(master string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.master == "" {
		close(s.ready)
	}
	s.cancel()
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.master = master
	s.gen++
}

// unregister forgets the registration: the master loop is about to register
// again.
func (s *session) unregister() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.unregisterLocked()
}

// unregisterLocked forgets the registration; the reporter then waits.
func (s *session) unregisterLocked() {
	s.cancel()
	if s.master != "" {
		s.master = ""
		s.ready = make(chan struct{})
	}
}

// lost reports that the master of registration gen no longer serves us (it
// did not answer, forgot us, or named another leader in hint). A report about
// an older registration is ignored: that was already dealt with.
func (s *session) lost(gen uint64, hint string) {
	s.mu.Lock()
	if s.master == "" || s.gen != gen {
		s.mu.Unlock()
		return
	}
	s.unregisterLocked()
	s.requestLocked(hint)
	s.mu.Unlock()
	s.signal()
}

// reconnect asks for a new registration, with master first if it is set (a
// master's Reconnect command).
func (s *session) reconnect(master string) {
	s.mu.Lock()
	s.unregisterLocked()
	s.requestLocked(master)
	s.mu.Unlock()
	s.signal()
}

func (s *session) requestLocked(hint string) {
	s.relook = true
	if hint != "" {
		s.hint = hint
	}
	s.signalRelook()
	s.relooked, s.signalRelook = context.WithCancel(context.Background())
}

func (s *session) signal() {
	select {
	case s.wake <- struct{}{}:
	default: // one pending wake-up is enough; the hint is in the struct
	}
}

// take returns and clears a pending relook request.
func (s *session) take() (relook bool, hint string) {
	select {
	case <-s.wake: // consumed here; a signal racing with us only causes a spurious wake-up
	default:
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	relook, hint = s.relook, s.hint
	s.relook, s.hint = false, ""
	return relook, hint
}

// masterURL is the master we are registered with, "" while not.
func (s *session) masterURL() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.master
}
