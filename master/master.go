package master

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/berth-cluster/berth/election"
	"github.com/berth-cluster/berth/internal/httpx"
	"github.com/berth-cluster/berth/persistence"
	"github.com/berth-cluster/berth/wire"
)

// Master is a running master: the loop that owns the core, the persistence
// writer, the worker outbox and the HTTP API.
type Master struct {
	cfg    Config
	log    *slog.Logger
	engine persistence.Engine
	agent  election.Agent
	core   *core

	calls    chan func(*core)      // from handlers: bounded, so overload pushes back
	internal *mailbox[func(*core)] // from the master's own goroutines: never blocks
	writes   *mailbox[proposal]
	out      *outbox
	lease    *leaderLease
	stopped  chan struct{} // closed when the loop has exited
	// gen mirrors the core's leadership generation for the writer, which
	// runs off the loop.
	gen atomic.Uint64

	// repl is what a replicated engine adds (nil with one master).
	repl Replication
	// peers asks the other masters for their Raft figures (the UI's list).
	peers peerFigures
	// watch is which masters answer (peerwatch.go).
	watch peerWatch
	// links are the web UI's one-time sign-in links (uilinks.go).
	links signInLinks
	// leaderClient asks the leader for what a follower cannot write.
	leaderClient peerClient
	// sessions are the web UI's (sessions.go).
	sessions *httpx.UISessions
	// prober asks a worker whose heartbeat connection closed whether
	// anything still listens at its address (heartbeat_conns.go).
	prober *httpx.Client
}

// New builds a master on engine, led by agent; repl is what the engine
// adds when it is replicated (nil for a master that runs alone). The clock
// may be nil.
func New(cfg Config, engine persistence.Engine, repl Replication, agent election.Agent, log *slog.Logger, clock Clock) (*Master, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if clock == nil {
		clock = realClock{}
	}
	m := &Master{
		cfg: cfg, log: log, engine: engine, repl: repl, agent: agent,
		calls:    make(chan func(*core), 1024),
		internal: newMailbox[func(*core)](),
		writes:   newMailbox[proposal](),
		lease:    newLeaderLease(repl),
		stopped:  make(chan struct{}),
	}
	m.sessions = m.newSessions()
	m.prober = newProber(cfg)
	m.out = newOutbox(cfg.workerClient(cfg.CommandTimeout), log, func(workerID string, cmd workerCommand, err error) {
		m.post(func(c *core) { c.commandFailed(workerID, cmd, err) })
	})
	m.core, err = newCore(cfg, log, clock, m)
	if err != nil {
		return nil, err
	}
	m.core.metrics.reg.MustRegister(stateCollector{m})
	return m, nil
}

// Run serves the API on ln until ctx is cancelled, then stops: leadership is
// handed over (with Raft), streams are closed, the server drains.
func (m *Master) Run(ctx context.Context, ln net.Listener) error {
	loopCtx, stopLoop := context.WithCancel(context.Background())
	defer stopLoop()
	w := &writer{engine: m.engine, queue: m.writes, done: m.post, gen: m.gen.Load, timeout: 10 * time.Second, log: m.log, observe: m.core.metrics.observeWrite}
	go w.run(loopCtx)
	go m.loop(loopCtx)
	go m.lease.refresh(loopCtx)
	go m.watchPeers(loopCtx)

	srv := httpx.NewServer(httpx.Guard(m.Handler(), m.cfg.Secret == "" && m.cfg.TLS == nil), m.log)
	m.watchWorkerConns(srv)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	m.agent.Start(m)
	m.log.Info("master serving", "id", m.cfg.ID, "address", m.cfg.Advertise, "listen", ln.Addr().String())

	var err error
	select {
	case <-ctx.Done():
	case err = <-served:
		err = fmt.Errorf("serving API: %w", err)
	}
	// Stop answering as the leader before handing over: the transfer may
	// elect another master at once.
	m.lease.handingOver.Store(true)
	m.agent.Stop() // hands leadership over first, with Raft
	m.post(func(c *core) {
		for _, a := range c.appOrder {
			c.closeSubscribers(a)
		}
	})
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if serr := srv.Shutdown(shutdownCtx); serr != nil {
		srv.Close()
	}
	m.out.close()
	stopLoop()
	<-m.stopped
	return err
}

// loop is the only goroutine that touches the core.
func (m *Master) loop(ctx context.Context) {
	defer close(m.stopped)
	ticker := time.NewTicker(m.cfg.tickInterval())
	defer ticker.Stop()
	c := m.core
	lastSchedule := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case fn := <-m.calls:
			fn(c)
		case <-m.internal.ready():
			for _, fn := range m.internal.take() {
				fn(c)
			}
		case <-ticker.C:
			c.tick()
		}
		// One scheduling pass for a burst of calls (a thousand workers
		// registering at once), but never more than maxScheduleDelay late.
		if len(m.calls) == 0 || time.Since(lastSchedule) > maxScheduleDelay {
			c.runSchedule()
			lastSchedule = time.Now()
		}
	}
}

// maxScheduleDelay bounds how long a burst of calls may hold back scheduling.
const maxScheduleDelay = 20 * time.Millisecond

// post runs fn in the loop; it never blocks.
func (m *Master) post(fn func(*core)) { m.internal.put(fn) }

var errStopped = httpx.Coded(http.StatusServiceUnavailable, wire.CodeShuttingDown, "master is shutting down")

// reply answers a request in the loop, once: with a value of the
// request's answer type, or an error. Typed, so that a transition that
// answers the wrong type does not compile.
type reply[T any] func(T, error)

// fail answers err.
func (r reply[T]) fail(err error) {
	var zero T
	r(zero, err)
}

// call runs fn in the loop, once this master has confirmed it leads (see
// leaderLease), and waits for it to reply (possibly later, from a
// continuation). It gives up when ctx ends; the reply is then dropped.
//
// While no master leads (an election) or this one is still preparing its
// leadership, the request is held for up to leaderHold and tried again, so
// that its answer is the new leader's (or a redirect to it) rather than a
// 503 that every client would poll through the election (Nomad's RPC hold).
// Only answers that changed nothing are retried.
func call[T any](ctx context.Context, m *Master, fn func(c *core, r reply[T])) (T, error) {
	deadline := time.Now().Add(leaderHold)
	for {
		v, err := callOnce(ctx, m, fn)
		if awaitingLeader(err) {
			if q := m.watch.quorumLost(); q != nil {
				// No election can end before masters come back: say so at
				// once rather than after the hold (and every client's
				// retries after it).
				return v, q.error()
			}
		}
		if !awaitingLeader(err) || time.Now().After(deadline) {
			return v, err
		}
		select {
		case <-ctx.Done():
			return v, err
		case <-m.stopped:
			return v, err
		case <-time.After(leaderPoll):
		}
	}
}

// How long, and how often, a request waits for a leader (see call). The
// hold stays well under clients' request timeouts, so a held request is not
// mistaken for a frozen master.
const (
	leaderHold = time.Second
	leaderPoll = 20 * time.Millisecond
)

// awaitingLeader reports whether err says no master can answer as the
// leader yet.
func awaitingLeader(err error) bool {
	var se *httpx.StatusError
	return errors.As(err, &se) && (se.Code == wire.CodeNoLeader || se.Code == wire.CodeLeaderPreparing)
}

func callOnce[T any](ctx context.Context, m *Master, fn func(c *core, r reply[T])) (T, error) {
	// A master that does not lead by its own account is answered by the
	// loop (a redirect, or "no leader"): only a leader must prove it.
	if m.lease.leading.Load() {
		if err := m.lease.confirm(ctx); err != nil {
			var zero T
			return zero, m.notConfirmed(err)
		}
	}
	return ask(ctx, m, fn)
}

// confirmedLeader reports whether this master leads by its own account and
// has confirmed it with a quorum.
func (m *Master) confirmedLeader(ctx context.Context) bool {
	return m.lease.leading.Load() && m.lease.confirm(ctx) == nil
}

// ask is call without confirming leadership, for answers that do not claim
// to be the leader's.
func ask[T any](ctx context.Context, m *Master, fn func(c *core, r reply[T])) (T, error) {
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	answer := func(v T, err error) {
		select {
		case done <- result{v, err}:
		default: // replied twice: a bug, but never block the loop over it
		}
	}
	var zero T
	tag := auditOf(ctx)
	select {
	case m.calls <- func(c *core) {
		c.req = tag
		defer func() { c.req = nil }()
		fn(c, answer)
	}:
	case <-ctx.Done():
		return zero, ctx.Err()
	case <-m.stopped:
		return zero, errStopped
	}
	select {
	case r := <-done:
		return r.v, r.err
	case <-ctx.Done():
		return zero, ctx.Err()
	case <-m.stopped:
		return zero, errStopped
	}
}

// query runs a synchronous fn in the loop (as call does).
func query[T any](ctx context.Context, m *Master, fn func(c *core) (T, error)) (T, error) {
	return call(ctx, m, func(c *core, r reply[T]) { r(fn(c)) })
}

// ElectedLeader implements election.Candidate.
func (m *Master) ElectedLeader() { m.post(func(c *core) { c.elected() }) }

// RevokedLeadership implements election.Candidate.
func (m *Master) RevokedLeadership() { m.post(func(c *core) { c.revoked() }) }

// effects, the real ones.

// persist runs in the loop, so reading the core's generation is safe.
func (m *Master) persist(cmds []persistence.Command, then func(error)) {
	m.writes.put(proposal{cmds: cmds, then: then, gen: m.core.gen})
}

func (m *Master) send(w *workerInfo, cmd workerCommand) {
	m.out.send(w.rec.ID, w.rec.Address, cmd)
}

func (m *Master) resend(w *workerInfo) { m.out.kick(w.rec.ID) }

// dropOutbound runs in the loop at a revocation: commands still queued for
// workers are dropped, and writes still queued will be refused.
func (m *Master) dropOutbound() {
	m.gen.Store(m.core.gen)
	m.lease.drop()
	m.out.drop()
}

// prepareLeadership: Barrier so that every earlier write is applied here,
// then bump the epoch (with this master's address, so followers can point
// clients at it), then read the state. It ends in leadershipReady.
func (m *Master) prepareLeadership(gen uint64) {
	m.gen.Store(gen)
	m.lease.leading.Store(true)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		s, err := m.prepare(ctx)
		if err != nil {
			// leadershipReady retries; pace it.
			select {
			case <-time.After(500 * time.Millisecond):
			case <-m.stopped:
				return
			}
		}
		m.post(func(c *core) { c.leadershipReady(gen, s, err) })
	}()
}

func (m *Master) prepare(ctx context.Context) (*persistence.State, error) {
	if m.repl != nil && m.repl.DiskFull() {
		m.log.Warn("elected with a full disk: handing leadership to another master")
		if err := m.repl.TransferLeadership(ctx); err != nil {
			return nil, fmt.Errorf("elected with a full disk, and %w", err)
		}
		return nil, errors.New("elected with a full disk: leadership handed over")
	}
	if err := m.engine.Barrier(ctx); err != nil {
		return nil, fmt.Errorf("barrier: %w", err)
	}
	bump := []persistence.Command{
		persistence.BumpEpoch(),
		persistence.PutMaster(persistence.MasterRecord{ID: m.cfg.ID, APIAddr: m.cfg.Advertise}),
	}
	if err := m.engine.Write(ctx, bump); err != nil {
		return nil, fmt.Errorf("bumping the epoch: %w", err)
	}
	s, err := m.engine.Load(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the state: %w", err)
	}
	return s, nil
}

// Addr is the advertised API address.
func (m *Master) Addr() string { return m.cfg.Advertise }
