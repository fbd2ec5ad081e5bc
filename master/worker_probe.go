package master

import (
	"fmt"
	"time"

	"github.com/berth-cluster/berth/wire"
)

// A worker whose process died on a host that still runs is lost at once,
// not after --worker-timeout. The kernel of such a host closes the dead
// process's connections, the keep-alive connection its heartbeats ride on
// included, and the server tells the loop (heartbeat_conns.go). A close is
// only a hint: a worker's client re-dials, an idle connection times out, a
// proxy or a man in the middle resets one. So the leader then asks the
// worker's own address, twice, a few hundred milliseconds apart: refused
// both times with no heartbeat in between means nothing listens there on
// a host that answers, and the worker is removed as on a timeout
// (removeWorker). Any other answer (something accepted the connection, or
// nothing came back: a partition, a frozen or powered-off machine) changes
// nothing, and the timeout judges the worker exactly as before.

const (
	// probeFirstDelay: the first probe waits a little, so that a dying
	// process whose heartbeat connection closed before its listener (the
	// kernel closes a process's files one by one) is not found listening.
	probeFirstDelay = 100 * time.Millisecond
	// probeGap separates the probes: one refusal could be a listener
	// being replaced (a restart on the same port).
	probeGap = 300 * time.Millisecond
	// probeAttempts refusals in a row make the verdict.
	probeAttempts = 2
	// probeTimeout bounds one probe: a host that answers refuses within a
	// round trip; silence is the timeout's to judge, not the probe's.
	probeTimeout = time.Second
	// maxProbeSequences bounds the sequences under way at once, so that
	// connections closing en masse (a proxy restarted, the connection cap
	// evicting idle ones) cost at most this many probes at a time.
	maxProbeSequences = 64
)

// probeOutcome is what a probe of a worker's address found.
type probeOutcome int

const (
	probeAnswered probeOutcome = iota // something accepted the connection (and answered, or not)
	probeRefused                      // the host refused: nothing listens on the port
	probeSilent                       // no answer within probeTimeout, or another error
)

func (o probeOutcome) String() string {
	switch o {
	case probeAnswered:
		return "answered"
	case probeRefused:
		return "refused"
	default:
		return "silent"
	}
}

// probeRequest asks the edge to probe a worker's API address after delay
// (effects.probeWorker); the answer comes back to the loop through
// core.probeDone with the same request.
type probeRequest struct {
	worker  string
	addr    string // the worker's API address, host:port
	url     string // its API's base URL
	seq     uint64 // the sequence it belongs to
	attempt int    // from 1
	delay   time.Duration
}

// probeResult is a probe's answer.
type probeResult struct {
	outcome probeOutcome
	err     error // what the dial said, for the log
}

// workerProbe is a probe sequence under way.
type workerProbe struct {
	w     *workerInfo
	gen   uint64    // the leadership it began under
	seq   uint64    // tells its answers from a former sequence's
	heard time.Time // w.lastHeartbeat when it began: a later one ends it
}

// workerProbes are the sequences under way, by worker id (one at a time per
// worker). seq only grows, across leaderships too, so that a late answer
// never passes for a later sequence's.
type workerProbes struct {
	seq    uint64
	active map[string]*workerProbe
}

// probeable reports whether w is a worker this master may declare lost:
// it leads, is ALIVE (not recovering), and w is live and not being
// removed, as expireWorkers has it.
func (c *core) probeable(w *workerInfo) bool {
	if w == nil || !c.leading() || c.status != wire.MasterAlive || w.removing != nil {
		return false
	}
	switch w.state {
	case wire.WorkerAlive, wire.WorkerDecommissioned, wire.WorkerDecommissioning:
		return true
	}
	return false
}

// heartbeatConnClosed is the server's word that a connection worker id's
// registration or heartbeats came on has closed: it starts a probe sequence, unless one is
// under way for the worker or maxProbeSequences are.
func (c *core) heartbeatConnClosed(id string) {
	w := c.workers[id]
	if !c.probeable(w) {
		return
	}
	if _, busy := c.probes.active[id]; busy {
		return
	}
	if len(c.probes.active) >= maxProbeSequences {
		c.log.Debug("worker's heartbeat connection closed; not probing it: enough probes under way", "worker", id, "probes", len(c.probes.active))
		return
	}
	if c.probes.active == nil {
		c.probes.active = map[string]*workerProbe{}
	}
	c.probes.seq++
	p := &workerProbe{w: w, gen: c.gen, seq: c.probes.seq, heard: w.lastHeartbeat}
	c.probes.active[id] = p
	c.log.Debug("worker's heartbeat connection closed; probing its address", "worker", id, "address", w.hostPort())
	c.fx.probeWorker(probeRequest{worker: id, addr: w.hostPort(), url: w.rec.Address, seq: p.seq, attempt: 1, delay: probeFirstDelay})
}

// probeDone takes a probe's answer: a second refusal with no heartbeat
// since the sequence began removes the worker; a first one asks for the
// next probe; anything else ends the sequence with nothing changed.
func (c *core) probeDone(req probeRequest, res probeResult) {
	p := c.probes.active[req.worker]
	if p == nil || p.seq != req.seq {
		return // a former sequence's, or a leadership's that is over
	}
	w := p.w
	switch {
	case p.gen != c.gen || c.workers[req.worker] != w || !c.probeable(w):
		// Leadership changed, or the worker is gone or going already.
	case !w.lastHeartbeat.Equal(p.heard):
		c.log.Debug("worker heard from during its probe: it lives", "worker", req.worker)
	case res.outcome != probeRefused:
		c.log.Debug("worker's address not refused: its heartbeat timeout judges it", "worker", req.worker, "address", req.addr, "probe", res.outcome, "err", res.err)
	case req.attempt < probeAttempts:
		next := req
		next.attempt++
		next.delay = probeGap
		c.fx.probeWorker(next)
		return
	default:
		delete(c.probes.active, req.worker)
		reason := fmt.Sprintf("worker %s's process is gone (its connection closed and nothing listens at %s)", req.worker, req.addr)
		c.log.Warn("worker's connection closed and its address refuses connections: removing it now, not at its heartbeat timeout",
			"worker", req.worker, "address", req.addr, "probes", probeAttempts, "err", res.err)
		c.removeWorker(w, reason, nil)
		return
	}
	delete(c.probes.active, req.worker)
}
