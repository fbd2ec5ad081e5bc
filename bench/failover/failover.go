package failover

import (
	"context"
	"fmt"
	"syscall"
	"time"

	"github.com/berth-cluster/berth/bench/internal/benchstat"
	"github.com/berth-cluster/berth/internal/poll"
	"github.com/berth-cluster/berth/testkit/testcluster"
	"github.com/berth-cluster/berth/wire"
)

// Scenarios that take the leader away.
const (
	scenarioKill     = "kill"     // SIGKILL: the others notice by Raft's timeouts
	scenarioHandover = "handover" // SIGTERM: the leader hands over, then exits
	scenarioSubmit   = "submit"
)

// Round is one failover.
type Round struct {
	Scenario  string    `json:"scenario"`
	N         int       `json:"round"`
	Start     time.Time `json:"start"` // when the signal was sent
	Victim    string    `json:"victim"`
	NewLeader string    `json:"newLeader,omitempty"`
	OldEpoch  uint64    `json:"oldEpoch"`
	NewEpoch  uint64    `json:"newEpoch,omitempty"`
	// From the signal to: a surviving master names a new Raft leader; the
	// new leader serves its view (Barrier and epoch bump done: RECOVERING
	// or ALIVE); the new leader is ALIVE with every worker ALIVE (and the
	// app's client back). Zero when not reached.
	ElectedMs float64 `json:"electedMs"`
	LeadingMs float64 `json:"leadingMs"`
	AliveMs   float64 `json:"aliveMs"`
	// Within recovery, from the signal to: the new leader's view has every
	// worker ALIVE (re-registered and reported); the app's client is back
	// (its state no longer UNKNOWN).
	WorkersMs float64 `json:"workersMs"`
	AppMs     float64 `json:"appMs,omitempty"`
	// OldExitMs (handover): the old leader's process exited.
	OldExitMs float64 `json:"oldExitMs,omitempty"`
	// RestartMs: the victim restarted until it is a caught-up follower and
	// the cluster steady again (not part of the failover).
	RestartMs float64 `json:"restartMs,omitempty"`
	// AliveShort: an ALIVE view with fewer workers was seen first (their count).
	AliveShort *int     `json:"aliveShortWorkers,omitempty"`
	Polls      int      `json:"polls"`
	Problems   []string `json:"problems,omitempty"`

	elected, leading, alive, workers, app time.Duration
}

// obs is one answer of a master to GET /v1/cluster.
type obs struct {
	at time.Time // when the answer arrived
	m  *masterNode
	st wire.ClusterStatus
	ok bool
}

// watch polls each of masters every interval until ctx ends.
func (cl *cluster) watch(ctx context.Context, masters []*masterNode, every time.Duration) <-chan obs {
	ch := make(chan obs, 64)
	for _, m := range masters {
		go func() {
			for ctx.Err() == nil {
				st, err := cl.status(ctx, m.url, time.Second)
				select {
				case ch <- obs{at: time.Now(), m: m, st: st, ok: err == nil}:
				case <-ctx.Done():
					return
				}
				if !poll.Sleep(ctx, every) {
					return
				}
			}
		}()
	}
	return ch
}

// runFailovers runs rounds of scenario on cl, which must be steady with its
// app. progress gets one line per round.
func runFailovers(ctx context.Context, cl *cluster, scenario string, rounds int, progress func(string)) ([]Round, error) {
	var out []Round
	for n := 1; n <= rounds; n++ {
		if !poll.Sleep(ctx, cl.cfg.settle) {
			return out, ctx.Err()
		}
		r, err := cl.failover(ctx, scenario, n)
		out = append(out, r)
		progress(r.line())
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

func (r Round) line() string {
	s := fmt.Sprintf("%-8s round %2d: %s (epoch %d) → %s (epoch %d): elected %5.0f, serving %5.0f, workers %5.0f, ",
		r.Scenario, r.N, r.Victim, r.OldEpoch, r.NewLeader, r.NewEpoch, r.ElectedMs, r.LeadingMs, r.WorkersMs)
	if r.AppMs > 0 {
		s += fmt.Sprintf("app %5.0f, ", r.AppMs)
	}
	s += fmt.Sprintf("ALIVE %5.0f ms", r.AliveMs)
	if r.Scenario == scenarioHandover {
		s += fmt.Sprintf(", old exited %5.0f ms", r.OldExitMs)
	}
	s += fmt.Sprintf("; restart %6.0f ms", r.RestartMs)
	for _, p := range r.Problems {
		s += "\n    PROBLEM: " + p
	}
	return s
}

// failover runs one round: signal the leader, time the takeover, restart
// the victim and wait until the cluster is steady again. An error means
// the cluster cannot go on (the round's Problems say why).
func (cl *cluster) failover(ctx context.Context, scenario string, n int) (Round, error) {
	r := Round{Scenario: scenario, N: n}
	leader, st, err := cl.steady(ctx, 60*time.Second, true)
	if err != nil {
		r.Problems = append(r.Problems, "before the round: "+err.Error())
		return r, err
	}
	r.Victim, r.OldEpoch = leader.id, st.Epoch
	var survivors []*masterNode
	for _, m := range cl.masters {
		if m != leader && m.running() {
			survivors = append(survivors, m)
		}
	}
	sig := syscall.SIGKILL
	if scenario == scenarioHandover {
		sig = syscall.SIGTERM
	}
	if cl.app != nil {
		cl.app.setRound(fmt.Sprintf("%s round %d", scenario, n))
	}

	r.Start = time.Now()
	if err := leader.proc.Signal(sig); err != nil {
		r.Problems = append(r.Problems, err.Error())
		return r, err
	}
	wctx, stopWatch := context.WithCancel(ctx)
	answers := cl.watch(wctx, survivors, cl.cfg.poll)
	timeout := time.NewTimer(cl.cfg.roundTimeout)
	var final wire.ClusterStatus
	done := false
	for !done {
		select {
		case <-ctx.Done():
			stopWatch()
			timeout.Stop()
			r.Problems = append(r.Problems, "interrupted: "+ctx.Err().Error())
			return r, ctx.Err()
		case <-timeout.C:
			r.Problems = append(r.Problems, fmt.Sprintf("no ALIVE leader with all %d workers within %s", len(cl.workers), cl.cfg.roundTimeout))
			done = true
		case o := <-answers:
			r.Polls++
			if !o.ok || o.at.Before(r.Start) {
				continue
			}
			since := o.at.Sub(r.Start)
			s := o.st
			if r.elected == 0 && s.LeaderID != "" && s.LeaderID != leader.id {
				r.elected = since
			}
			if s.View != wire.ViewLeader || s.Epoch <= r.OldEpoch {
				continue
			}
			if r.elected == 0 {
				r.elected = since
			}
			if r.leading == 0 {
				r.leading, r.NewLeader = since, s.MasterID
			}
			workers := s.WorkerSummary.Alive
			if r.workers == 0 && workers == len(cl.workers) {
				r.workers = since
			}
			appBack := true
			if cl.app != nil {
				a, ok := findApp(s, cl.app.id)
				if r.app == 0 && ok && a.State != wire.AppUnknown {
					r.app = since
				}
				appBack = ok && a.State == wire.AppRunning
			}
			if s.Status != wire.MasterAlive {
				continue
			}
			// Recovery waits for the workers, not for app clients (they
			// answer in their own time): ALIVE without every worker is a
			// problem, ALIVE before the app's client is back is not.
			if workers != len(cl.workers) && r.AliveShort == nil {
				r.AliveShort = &workers
				r.Problems = append(r.Problems, fmt.Sprintf("%s went ALIVE with %d/%d workers ALIVE", s.MasterID, workers, len(cl.workers)))
			}
			if workers == len(cl.workers) && appBack {
				r.alive, r.NewLeader, r.NewEpoch, final = since, s.MasterID, s.Epoch, s
				done = true
			}
		}
	}
	stopWatch()
	timeout.Stop()
	r.ElectedMs, r.LeadingMs, r.AliveMs = benchstat.Ms(r.elected), benchstat.Ms(r.leading), benchstat.Ms(r.alive)
	r.WorkersMs, r.AppMs = benchstat.Ms(r.workers), benchstat.Ms(r.app)

	// The victim: SIGKILL is immediate; a handover ends in an exit.
	grace := 20 * time.Second
	if !exitedWithin(leader.proc, grace) {
		r.Problems = append(r.Problems, fmt.Sprintf("%s did not exit within %s of %v; killed", leader.id, grace, sig))
		leader.proc.Kill()
	}
	if scenario == scenarioHandover {
		r.OldExitMs = benchstat.Ms(leader.proc.ExitedAt().Sub(r.Start))
		if err := leader.proc.Err(); err != nil {
			r.Problems = append(r.Problems, fmt.Sprintf("%s exited with %v after SIGTERM", leader.id, err))
		}
	}
	if r.alive > 0 {
		r.Problems = append(r.Problems, cl.executorsIntact(final)...)
	}
	if r.alive == 0 {
		return r, fmt.Errorf("%s round %d: the cluster did not recover: %v", scenario, n, r.Problems)
	}

	restart := time.Now()
	if err := leader.start(); err != nil {
		return r, err
	}
	if err := testcluster.WaitHealthy(ctx, leader.proc, leader.url, 30*time.Second); err != nil {
		r.Problems = append(r.Problems, err.Error())
		return r, err
	}
	_, st, err = cl.steady(ctx, 60*time.Second, true)
	if err != nil {
		r.Problems = append(r.Problems, "after the restart: "+err.Error())
		return r, err
	}
	r.RestartMs = benchstat.Ms(time.Since(restart))
	r.Problems = append(r.Problems, cl.executorsIntact(st)...)
	return r, nil
}
