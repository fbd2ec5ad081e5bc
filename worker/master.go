package worker

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/berth-cluster/berth/internal/httpx"
	"github.com/berth-cluster/berth/internal/poll"
	"github.com/berth-cluster/berth/wire"
)

// The master loop: find the leader, register, send the latest state,
// heartbeat; on any sign that the master no longer serves us, start over,
// keeping the worker id and every child running.

const registerBackoffBase = 100 * time.Millisecond

// A heartbeat or a registration attempt that gets no answer this quickly
// is abandoned: the master froze or is cut off, and a new leader may
// already be waiting for us. A master answers both in milliseconds.
const (
	heartbeatTimeout       = 2 * time.Second
	registerAttemptTimeout = 3 * time.Second
)

// within returns a context for one request: done when parent or reg ends,
// or after timeout.
func within(parent, reg context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(parent, timeout)
	stop := context.AfterFunc(reg, cancel)
	return ctx, func() {
		stop()
		cancel()
	}
}

// masterLoop runs until ctx ends.
func (w *Worker) masterLoop(ctx context.Context) {
	failures := 0 // consecutive registrations not followed by a heartbeat
	hint := ""
	for ctx.Err() == nil {
		if _, h := w.sess.take(); h != "" {
			hint = h
		}
		master, reg, err := w.register(ctx, hint)
		if err != nil {
			return // ctx ended
		}
		hint = ""
		w.observeEpoch(reg.Epoch)
		interval := time.Duration(reg.HeartbeatIntervalMs) * time.Millisecond
		if interval <= 0 {
			interval = DefaultHeartbeatEvery
		}
		w.log.Info("registered with master", "master", master, "masterId", reg.MasterID,
			"epoch", reg.Epoch, "duplicate", reg.Duplicate, "heartbeat", interval)

		ok := false
		if err := w.sendLatestState(ctx, master); err != nil {
			if ctx.Err() != nil {
				return
			}
			w.log.Warn("sending the latest state failed; registering again", "master", master, "err", err)
			hint = leaderOf(err)
			if isStatus(err, http.StatusNotFound) {
				hint = master // it forgot us already: register there again
			}
		} else {
			w.contact.touch()
			w.sess.registered(master)
			ok, hint = w.heartbeatLoop(ctx, master, interval)
		}
		if ok {
			failures = 0
			continue
		}
		// Registration answers quickly when what follows does not, so pause
		// or the two would spin.
		failures++
		if !poll.Sleep(ctx, backoff(failures, registerBackoffBase, w.cfg.RegisterBackoffMax)) {
			return
		}
	}
}

// register tries the masters (hint first, then the last master, then the
// --master list) in rounds separated by a jittered exponential backoff, and
// follows redirects to the leader, until one accepts the registration or ctx
// ends.
func (w *Worker) register(ctx context.Context, hint string) (string, wire.RegisteredWorker, error) {
	req := wire.RegisterWorker{
		ID: w.id, Host: w.host, Port: w.port, Address: w.url, Limits: w.limits,
		Cores: w.cfg.Cores, MemoryMB: w.cfg.MemoryMB, Incarnation: w.incarnation,
		Resources: w.cfg.Resources, PortRange: &w.cfg.PortRange, Labels: w.cfg.Labels,
	}
	for round := 0; ; round++ {
		slow := false // a wrong secret will not fix itself soon
		var lastErr error
		relooked := w.sess.relookSignal()
	candidates:
		for _, first := range w.candidates(hint) {
			target := first
			for hops := 0; target != "" && hops < 4; hops++ {
				actx, cancel := within(ctx, relooked, min(w.cfg.RequestTimeout, registerAttemptTimeout))
				reg, err := httpx.Call(actx, w.client, target, wire.MasterAPI.RegisterWorker, req)
				cancel()
				if err == nil {
					w.lastMaster = target
					w.contact.touch()
					return target, reg, nil
				}
				if ctx.Err() != nil {
					return "", reg, ctx.Err()
				}
				select {
				case <-relooked.Done():
					// A master (a new leader) told us where to go: go there
					// now rather than wait on this one.
					if _, h := w.sess.take(); h != "" {
						hint = h
					}
					w.log.Info("registration redirected by a reconnect", "from", target, "to", hint)
					break candidates
				default:
				}
				lastErr = err
				next := ""
				var se *httpx.StatusError
				switch {
				case errors.As(err, &se) && se.Status == http.StatusTemporaryRedirect:
					if l := normalizeMaster(se.Leader); l != "" && l != target {
						w.log.Debug("master is not the leader; following", "master", target, "leader", l)
						next = l
					} else {
						w.log.Debug("master is not the leader and names none", "master", target)
					}
				case errors.As(err, &se) && se.Status == http.StatusServiceUnavailable:
					w.log.Debug("master has no leader now", "master", target, "reason", se.Message)
				case errors.As(err, &se) && se.Status == http.StatusUnauthorized:
					w.log.Error("master refused the worker's secret: check --secret / BERTH_SECRET", "master", target)
					slow = true
				case errors.As(err, &se) && se.Status/100 == 4:
					w.log.Warn("master refused the registration", "master", target, "status", se.Status, "reason", se.Message)
				default:
					w.log.Debug("master unreachable", "master", target, "err", err)
				}
				target = next
			}
		}
		select {
		case <-relooked.Done():
			continue // straight to the hint
		default:
		}
		d := backoff(round+1, registerBackoffBase, w.cfg.RegisterBackoffMax)
		if slow {
			d = w.cfg.RegisterBackoffMax
		}
		lvl := slog.LevelDebug
		if round%10 == 2 { // say so now and then, not at every round
			lvl = slog.LevelWarn
		}
		w.log.Log(ctx, lvl, "no master accepted the registration; retrying",
			"masters", w.cfg.Masters, "lastError", lastErr, "in", d.Round(time.Millisecond))
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return "", wire.RegisteredWorker{}, ctx.Err()
		case <-w.sess.wake:
			t.Stop()
			_, h := w.sess.take()
			if h != "" {
				hint = h
			}
		case <-t.C:
		}
	}
}

// candidates lists the masters to try, in order, without duplicates.
func (w *Worker) candidates(hint string) []string {
	list := make([]string, 0, len(w.cfg.Masters)+2)
	seen := map[string]bool{}
	for _, m := range append([]string{hint, w.lastMaster}, w.cfg.Masters...) {
		if m != "" && !seen[m] {
			seen[m] = true
			list = append(list, m)
		}
	}
	return list
}

// sendLatestState tells a master we just registered with everything we run
// (Spark's WorkerLatestState); the master kills what it does not know by
// sending kill commands, and lists them in its reply, which we only log.
func (w *Worker) sendLatestState(ctx context.Context, master string) error {
	st := w.latestState()
	reply, err := httpx.Call(ctx, w.client, master, wire.MasterAPI.LatestState, st, w.id)
	if err != nil {
		return err
	}
	if len(reply.KilledExecutors) > 0 || len(reply.KilledDrivers) > 0 {
		w.log.Info("master is killing what it does not know", "executors", reply.KilledExecutors, "drivers", reply.KilledDrivers)
	}
	return nil
}

// heartbeatLoop heartbeats master until ctx ends or the master must be looked
// for again; then the session is no longer registered. It reports whether at
// least one heartbeat went through, and a master to try first if one is known.
func (w *Worker) heartbeatLoop(ctx context.Context, master string, interval time.Duration) (ok bool, hint string) {
	_, gen, _, regCtx := w.sess.current()
	// Each wait is 90-100% of the interval, at random: workers that
	// registered together (a master's failover) spread out instead of
	// beating in step, and none is ever later than the master asked.
	t := time.NewTimer(jittered(interval))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ok, ""
		case <-w.sess.wake:
			// Someone called lost or reconnect (possibly before this
			// registration completed: register again all the same).
			relook, hint := w.sess.take()
			if !relook {
				continue // a stale wake-up
			}
			w.sess.unregister()
			w.log.Info("registering again", "master", master, "next", hint)
			return true, hint
		case <-w.beatNow: // the disk filled or emptied, ports were found held: the master must know now
		case <-t.C:
		}
		t.Reset(jittered(interval))
		used := w.procs.used()
		hctx, cancel := within(ctx, regCtx, min(w.cfg.RequestTimeout, heartbeatTimeout))
		reply, err := httpx.Call(hctx, w.client, master, wire.MasterAPI.WorkerHeartbeat,
			wire.Heartbeat{CoresUsed: used.cores, MemoryUsedMB: used.memoryMB, DiskFull: w.noteDisk(w.diskFull()), BusyPorts: w.busy(false)}, w.id)
		cancel()
		if ctx.Err() != nil {
			return ok, ""
		}
		if regCtx.Err() != nil {
			continue // a reconnect came while it was in flight: act on it
		}
		if err != nil {
			switch {
			case isStatus(err, http.StatusNotFound):
				w.log.Warn("master does not know this worker; registering again", "master", master)
				w.sess.lost(gen, master)
			case isStatus(err, http.StatusUnauthorized):
				w.log.Error("master refused the worker's secret: check --secret / BERTH_SECRET", "master", master)
				w.sess.lost(gen, "")
			default:
				w.log.Warn("master did not take the heartbeat; looking for the leader", "master", master, "err", err)
				w.sess.lost(gen, leaderOf(err))
			}
			return ok, ""
		}
		ok = true
		w.contact.touch()
		w.observeEpoch(reply.Epoch)
		if reply.HeartbeatIntervalMs > 0 {
			interval = time.Duration(reply.HeartbeatIntervalMs) * time.Millisecond // the fleet grew or shrank
		}
		if reply.Reconnect {
			w.log.Info("master asks the worker to register again", "master", master)
			w.sess.lost(gen, master)
			return ok, ""
		}
	}
}

// isStatus reports whether err is a StatusError with status.
func isStatus(err error, status int) bool {
	var se *httpx.StatusError
	return errors.As(err, &se) && se.Status == status
}

// leaderOf extracts the leader named by a 307, or "".
func leaderOf(err error) string {
	var se *httpx.StatusError
	if errors.As(err, &se) && se.Status == http.StatusTemporaryRedirect {
		return normalizeMaster(se.Leader)
	}
	return ""
}

// normalizeMaster checks a master's API base URL (a leader a master named,
// or one a reconnect gave) by wire.ParseMasterURL's rule and returns it in
// that rule's form; "" if it breaks the rule.
func normalizeMaster(s string) string {
	base, err := wire.ParseMasterURL("leader", s)
	if err != nil {
		return ""
	}
	return base
}

// backoff is the attempt-th (from 1) exponential pause from base, capped,
// with jitter in its upper half so that workers restarted together do not
// retry in lockstep.
func backoff(attempt int, base, limit time.Duration) time.Duration {
	d := base
	for i := 1; i < attempt && d < limit; i++ {
		d *= 2
	}
	d = min(d, limit)
	return d/2 + rand.N(d/2+1)
}

// jittered is d less up to 10%, at random.
func jittered(d time.Duration) time.Duration {
	return d - time.Duration(rand.Int64N(int64(d)/10+1))
}
