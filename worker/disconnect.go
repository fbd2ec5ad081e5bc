package worker

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Processes that asked to stop when their worker is out of touch
// (stopAfterDisconnect, Nomad's disconnect.stop_on_client_after): once no
// master has accepted a registration, a latest state or a heartbeat from
// this worker for that long, the masters have counted its executors LOST
// and placed replacements, so the worker stops them rather than let two
// copies run. A process that asked nothing is left running: a masters'
// outage must not kill work (docs/HA.md).

// masterContact is when a master last accepted something from the worker.
type masterContact struct {
	mu   sync.Mutex
	last time.Time
}

func (m *masterContact) touch() {
	m.mu.Lock()
	m.last = time.Now()
	m.mu.Unlock()
}

// since is how long the worker has been out of touch.
func (m *masterContact) since() time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	return time.Since(m.last)
}

// disconnectCheckEvery is how often the worker looks: a process stops
// within this much of its stopAfterDisconnect.
const disconnectCheckEvery = 250 * time.Millisecond

// stopDisconnectedLoop stops, until ctx ends, the processes whose
// stopAfterDisconnect the time out of touch has passed.
func (w *Worker) stopDisconnectedLoop(ctx context.Context) {
	t := time.NewTicker(disconnectCheckEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		out := w.contact.since()
		for _, p := range w.procs.live("", false) {
			if p.stopAfterDisconnect > 0 && out >= p.stopAfterDisconnect {
				reason := fmt.Sprintf("stopped: out of touch with every master for %s (stopAfterDisconnect %s)",
					out.Round(time.Second), p.stopAfterDisconnect)
				if w.stopOutOfTouch(p, reason) {
					w.procLog(p).Warn("stopping: out of touch with the masters", "for", out.Round(time.Second), "stopAfterDisconnect", p.stopAfterDisconnect)
				}
			}
		}
	}
}

// stopOutOfTouch kills p as stopAfterDisconnect's: it ends LOST (an
// executor) or reported as out of touch (a driver). It reports false if p
// had ended or was being killed already.
func (w *Worker) stopOutOfTouch(p *proc, reason string) bool {
	w.procs.mu.Lock()
	defer w.procs.mu.Unlock()
	if p.ended || p.killReason != "" {
		return false
	}
	p.outOfTouch = true
	w.killLocked(p, reason, 0)
	return true
}

// stoppedOutOfTouch reports whether p's kill was stopAfterDisconnect's.
func (w *Worker) stoppedOutOfTouch(p *proc) bool {
	w.procs.mu.Lock()
	defer w.procs.mu.Unlock()
	return p.outOfTouch
}
