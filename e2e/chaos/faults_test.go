package chaos

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/berth-cluster/berth/internal/poll"
	"github.com/berth-cluster/berth/testkit/testcluster"
	"github.com/berth-cluster/berth/wire"
)

// How long the faults last, against the cluster's timeouts (see
// masterFlags), and how long the cluster may take to be back.
const (
	shortFreeze = 3 * time.Second  // under the recovery timeout
	longFreeze  = 12 * time.Second // over every timeout
	backWithin  = 30 * time.Second // a fault after which the cluster is not back by then fails the run
)

// faultKind is one kind of fault: inject, measure until everything is back,
// restore.
type faultKind struct {
	name string
	run  func(ch *chaos) ([]faultResult, error)
	// possible says why the fault cannot be made here (nil: always
	// possible); such a fault is skipped, and the run says so.
	possible func(ch *chaos) error
}

// faultResult is one fault's measure. failover runs from the injection to
// the moment a leader was ALIVE with every worker and every long-running
// app's client back (for a worker's fault: to the moment its executors
// run elsewhere); sinceElection from the new leader's election to then
// (leader faults only); more are the fault's other measures, by name.
type faultResult struct {
	kind          string
	failover      time.Duration
	sinceElection time.Duration
	newLeader     bool
	more          []measure
	// steps is what was still missing over time, until nothing was:
	// "+12ms no leader answered; +40ms 1 of 2 workers ALIVE; ..." (where
	// a failover's time goes).
	steps string
}

// measure is one of a fault's other figures: how long something it
// exercises took, or (count) how many times something happened, in d.
type measure struct {
	name  string
	d     time.Duration
	count bool
}

// took is a measure of how long something took.
func took(name string, d time.Duration) measure { return measure{name: name, d: d} }

// counted is a measure of how many times something happened.
func counted(name string, n int) measure {
	return measure{name: name, d: time.Duration(n), count: true}
}

func (m measure) String() string {
	if m.count {
		return fmt.Sprint(int64(m.d))
	}
	return ms(m.d)
}

var faultKinds = []faultKind{
	{name: "kill -9 leader", run: func(ch *chaos) ([]faultResult, error) {
		return ch.leaderFault("kill -9 leader", func(m *testcluster.Master) error { m.Proc().Kill(); return nil },
			func(m *testcluster.Master) error { return ch.cl.StartMaster(m) })
	}},
	{name: "SIGTERM handover", run: func(ch *chaos) ([]faultResult, error) {
		return ch.leaderFault("SIGTERM handover", func(m *testcluster.Master) error { return m.Proc().Signal(syscall.SIGTERM) },
			func(m *testcluster.Master) error { return ch.restartAfterExit(m) })
	}},
	{name: "SIGSTOP < recovery timeout", run: func(ch *chaos) ([]faultResult, error) { return ch.freeze("SIGSTOP < recovery timeout", shortFreeze) }},
	{name: "SIGSTOP > every timeout", run: func(ch *chaos) ([]faultResult, error) { return ch.freeze("SIGSTOP > every timeout", longFreeze) }},
	{name: "kill -9 follower", run: func(ch *chaos) ([]faultResult, error) { return ch.followerKill() }},
	{name: "partition leader's Raft", run: func(ch *chaos) ([]faultResult, error) { return ch.partition() }, possible: needCut},
	{name: "restart each master", run: func(ch *chaos) ([]faultResult, error) { return ch.restartEach() }},
	{name: "power loss", run: func(ch *chaos) ([]faultResult, error) { return ch.powerLoss() }},
	{name: "leader disk full", run: func(ch *chaos) ([]faultResult, error) { return ch.leaderDiskFull() }, possible: needSmallDisks},
	{name: "follower disk full", run: func(ch *chaos) ([]faultResult, error) { return ch.followerDiskFull() }, possible: needSmallDisks},
	{name: "worker disk full", run: func(ch *chaos) ([]faultResult, error) { return ch.workerDiskFull() }, possible: needWorkerDisks},
	{name: "worker freeze", run: func(ch *chaos) ([]faultResult, error) { return ch.workerFreeze() }},
	{name: "worker cut", run: func(ch *chaos) ([]faultResult, error) { return ch.workerCut() }, possible: needCut},
	// Last: the recovered master's Raft log was compacted, and bbolt
	// stores writes in the freed pages for tens of seconds after its disk
	// is full; a leader disk-full fault right after would wait that long.
	{name: "lost quorum, recovered", run: func(ch *chaos) ([]faultResult, error) { return ch.lostQuorum() }},
}

// needCut says why no network cut can be made here (nil: one can).
func needCut(ch *chaos) error {
	if ch.cut == nil {
		return ch.cutErr
	}
	return nil
}

// leaderFault injects a fault into the leader, measures the failover, then
// restores the master and waits until it has caught up as a follower.
func (ch *chaos) leaderFault(kind string, inject, restore func(*testcluster.Master) error) ([]faultResult, error) {
	m, st, err := ch.leader()
	if err != nil {
		return nil, err
	}
	t0 := time.Now()
	if err := inject(m); err != nil {
		return nil, err
	}
	res, err := ch.back(kind, t0, st.Epoch+1)
	if err != nil {
		return nil, err
	}
	if err := restore(m); err != nil {
		return nil, err
	}
	return []faultResult{res}, ch.caughtUp(m)
}

func (ch *chaos) restartAfterExit(m *testcluster.Master) error {
	select {
	case <-m.Proc().Done():
	case <-time.After(15 * time.Second):
		// SIGQUIT: the Go runtime writes every goroutine's stack into
		// the master's log, which the report keeps: where it hangs.
		_ = m.Proc().Signal(syscall.SIGQUIT)
		return fmt.Errorf("%s did not exit within 15s of SIGTERM (its goroutines are in its log, after SIGQUIT)", m.ID)
	}
	return ch.cl.StartMaster(m)
}

// freeze stops the leader for d (SIGSTOP), then lets it go on (SIGCONT): by
// then it must be a follower that answers nothing as the leader.
func (ch *chaos) freeze(kind string, d time.Duration) ([]faultResult, error) {
	m, st, err := ch.leader()
	if err != nil {
		return nil, err
	}
	t0 := time.Now()
	if err := m.Proc().Signal(syscall.SIGSTOP); err != nil {
		return nil, err
	}
	res, err := ch.back(kind, t0, st.Epoch+1)
	if rest := time.Until(t0.Add(d)); rest > 0 {
		time.Sleep(rest) // the freeze itself: its length is the fault
	}
	if cerr := m.Proc().Signal(syscall.SIGCONT); cerr != nil {
		return nil, errors.Join(err, cerr)
	}
	if err != nil {
		return nil, err
	}
	return []faultResult{res}, ch.caughtUp(m)
}

// followerKill kills a follower, holds it down while the load goes on,
// then restarts it.
func (ch *chaos) followerKill() ([]faultResult, error) {
	leader, st, err := ch.leader()
	if err != nil {
		return nil, err
	}
	var f *testcluster.Master
	for _, m := range ch.cl.Masters {
		if m != leader {
			f = m
			break
		}
	}
	t0 := time.Now()
	f.Proc().Kill()
	res, err := ch.back("kill -9 follower", t0, st.Epoch)
	if err != nil {
		return nil, err
	}
	time.Sleep(2 * time.Second) // the follower stays down under load: the fault's length
	if err := ch.cl.StartMaster(f); err != nil {
		return nil, err
	}
	return []faultResult{res}, ch.caughtUp(f)
}

// partition cuts the leader's Raft traffic while workers and clients still
// reach its API, holds the cut a while after the others elected a leader,
// then heals it.
func (ch *chaos) partition() ([]faultResult, error) {
	if ch.cut == nil {
		return nil, fmt.Errorf("no partition possible here: %w", ch.cutErr)
	}
	m, st, err := ch.leader()
	if err != nil {
		return nil, err
	}
	t0 := time.Now()
	if err := ch.cut.CutRaft(m, ch.cl.Masters); err != nil {
		return nil, err
	}
	res, err := ch.back("partition leader's Raft", t0, st.Epoch+1)
	if err == nil {
		time.Sleep(2 * time.Second) // the cut lasts on: its length is the fault
	}
	if herr := ch.cut.Heal(); herr != nil {
		return nil, errors.Join(err, herr)
	}
	if err != nil {
		return nil, err
	}
	return []faultResult{res}, ch.caughtUp(m)
}

// restartEach restarts every master in turn (SIGTERM, start again),
// waiting each time until everything is back and the master caught up.
func (ch *chaos) restartEach() ([]faultResult, error) {
	var out []faultResult
	for _, m := range ch.cl.Masters {
		leader, st, err := ch.leader()
		if err != nil {
			return out, err
		}
		minEpoch, kind := st.Epoch, "restart follower"
		if leader == m {
			minEpoch, kind = st.Epoch+1, "restart leader"
		}
		t0 := time.Now()
		if err := m.Proc().Signal(syscall.SIGTERM); err != nil {
			return out, err
		}
		if err := ch.restartAfterExit(m); err != nil {
			return out, err
		}
		res, err := ch.back(kind, t0, minEpoch)
		if err != nil {
			return out, err
		}
		out = append(out, res)
		if err := ch.caughtUp(m); err != nil {
			return out, err
		}
	}
	return out, nil
}

// powerLoss kills every master at once (SIGKILL to the three, then waits
// for them), starts them again together, and measures until everything is
// back: every acknowledged write must have been on a quorum's disks.
func (ch *chaos) powerLoss() ([]faultResult, error) {
	const kind = "power loss"
	_, st, err := ch.leader()
	if err != nil {
		return nil, err
	}
	t0 := time.Now()
	for _, m := range ch.cl.Masters {
		if err := m.Proc().Signal(syscall.SIGKILL); err != nil {
			return nil, err
		}
	}
	for _, m := range ch.cl.Masters {
		<-m.Proc().Done()
	}
	down := time.Now()
	errs := make([]error, len(ch.cl.Masters))
	var wg sync.WaitGroup
	for i, m := range ch.cl.Masters {
		wg.Go(func() { errs[i] = ch.cl.StartMaster(m) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	started := time.Now()
	res, err := ch.back(kind, t0, st.Epoch+1)
	if err != nil {
		return nil, err
	}
	res.more = append(res.more, took("all down", down.Sub(t0)), took("started (APIs answer)", started.Sub(t0)))
	for _, m := range ch.cl.Masters {
		if err := ch.caughtUp(m); err != nil {
			return []faultResult{res}, err
		}
	}
	return []faultResult{res}, nil
}

// lostQuorum is the operator's recovery from losing two of three masters
// (docs/HA.md): kill -9 both followers and throw their data away, stop the
// leader (kill -9: nothing can commit without a quorum anyway), turn its
// data into a one-master cluster (master --recover), start it, and grow
// back to three with --join and empty data directories. The survivor is
// the leader, which holds every write it acknowledged: the history must
// stay linearizable and nothing acknowledged be lost across the recovery.
func (ch *chaos) lostQuorum() ([]faultResult, error) {
	const kind = "lost quorum, recovered"
	survivor, st, err := ch.leader()
	if err != nil {
		return nil, err
	}
	var lost []*testcluster.Master
	for _, m := range ch.cl.Masters {
		if m != survivor {
			lost = append(lost, m)
		}
	}
	t0 := time.Now()
	for _, m := range lost {
		m.Proc().Kill()
	}
	for _, m := range lost {
		<-m.Proc().Done()
		if err := testcluster.EmptyDir(m.DataDir); err != nil {
			return nil, err
		}
	}
	survivor.Proc().Kill()
	<-survivor.Proc().Done()
	down := time.Now()
	if _, err := ch.cl.RecoverMaster(survivor); err != nil {
		return nil, err
	}
	if err := ch.cl.StartMaster(survivor); err != nil {
		return nil, err
	}
	recovered := time.Now()
	res, err := ch.back(kind, t0, st.Epoch+1)
	if err != nil {
		return nil, err
	}
	res.more = append(res.more, took("recovered (master --recover, started)", recovered.Sub(down)))
	joined := time.Now()
	for _, m := range lost {
		if err := ch.cl.Rejoin(m, survivor); err != nil {
			return []faultResult{res}, err
		}
	}
	for _, m := range lost {
		if err := ch.caughtUp(m); err != nil {
			return []faultResult{res}, err
		}
	}
	// The next fault may take any master: all three must vote again.
	if _, _, err := ch.until(kind+": three voters again", joined, joined.Add(backWithin), nil, func(st wire.ClusterStatus) string {
		voters := 0
		for _, n := range st.Masters {
			if n.Voter {
				voters++
			}
		}
		if voters != len(ch.cl.Masters) {
			return fmt.Sprintf("%d voters", voters)
		}
		return ""
	}); err != nil {
		return []faultResult{res}, err
	}
	res.more = append(res.more, took("grown back to three voters (--join)", time.Since(joined)))
	return []faultResult{res}, nil
}

// restartBetween restarts a follower between two faults (the i-th fault
// comes next): SIGTERM and kill -9 in turn, each follower in turn; it
// waits until everything is back and the follower has applied what the
// leader had committed.
func (ch *chaos) restartBetween(i int) ([]faultResult, error) {
	leader, st, err := ch.leader()
	if err != nil {
		return nil, err
	}
	var followers []*testcluster.Master
	for _, m := range ch.cl.Masters {
		if m != leader {
			followers = append(followers, m)
		}
	}
	f := followers[(i/2)%len(followers)]
	kind := "restart follower between faults (SIGTERM)"
	t0 := time.Now()
	if i%2 == 0 {
		kind = "restart follower between faults (kill -9)"
		f.Proc().Kill()
		err = ch.cl.StartMaster(f)
	} else if err = f.Proc().Signal(syscall.SIGTERM); err == nil {
		err = ch.restartAfterExit(f)
	}
	if err != nil {
		return nil, err
	}
	res, err := ch.back(kind, t0, st.Epoch)
	if err != nil {
		return nil, err
	}
	if err := ch.caughtUpLog(f); err != nil {
		return []faultResult{res}, err
	}
	return []faultResult{res}, ch.caughtUp(f)
}

// leader waits for the current ALIVE leader.
func (ch *chaos) leader() (*testcluster.Master, wire.ClusterStatus, error) {
	ctx, cancel := context.WithTimeout(context.Background(), backWithin)
	defer cancel()
	return ch.cl.WaitLeader(ctx)
}

// back polls until a leader of at least minEpoch is ALIVE with every
// worker ALIVE and every long-running app RUNNING its executors with its
// client answered, and measures the time since t0.
func (ch *chaos) back(kind string, t0 time.Time, minEpoch uint64) (faultResult, error) {
	return ch.backAt(kind, t0, minEpoch, false)
}

// backAt is back; at the start, every long-running app must have an
// executor RUNNING (later, one that may be preempted may have none).
func (ch *chaos) backAt(kind string, t0 time.Time, minEpoch uint64, start bool) (faultResult, error) {
	var steps timeline
	at, st, err := ch.until(kind+": cluster not back", t0, t0.Add(backWithin), &steps, func(st wire.ClusterStatus) string {
		return ch.missing(st, minEpoch, start)
	})
	if err != nil {
		return faultResult{}, err
	}
	res := faultResult{kind: kind, failover: at.Sub(t0), newLeader: minEpoch > 0 && st.Epoch >= minEpoch, steps: steps.String()}
	if st.LeaderSince != nil && st.LeaderSince.After(t0) {
		res.sinceElection = at.Sub(*st.LeaderSince)
	}
	return res, nil
}

// until polls the leader's view until cond finds nothing missing ("") or
// the deadline passes, and returns when that was (and the view).
// Each answer's first sight goes into steps (unless nil).
func (ch *chaos) until(what string, t0, deadline time.Time, steps *timeline, cond func(wire.ClusterStatus) string) (time.Time, wire.ClusterStatus, error) {
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	var at time.Time
	var found wire.ClusterStatus
	last := "no leader answered"
	if poll.Until(ctx, 20*time.Millisecond, func() bool {
		if ctx.Err() != nil {
			return false // past the deadline: the last answer stands
		}
		// A master that does not answer this quickly is frozen or cut
		// off; waiting longer would only blur the measure.
		qctx, qcancel := context.WithTimeout(ctx, 300*time.Millisecond)
		_, st, err := ch.cl.Leader(qctx)
		qcancel()
		if err != nil {
			last = err.Error()
			steps.saw(t0, "no leader answered")
			return false
		}
		if why := cond(st); why != "" {
			last = why
			steps.saw(t0, why)
			return false
		}
		steps.saw(t0, "")
		at, found = time.Now(), st
		return true
	}) {
		return at, found, nil
	}
	return time.Time{}, found, fmt.Errorf("%s within %s: %s", what, deadline.Sub(t0).Round(time.Second), last)
}

// missing says what is not back yet in a leader's status, "" if nothing:
// a strict long-running app RUNNING all its executors; another with its
// client answered (not UNKNOWN), and at the start an executor RUNNING.
func (ch *chaos) missing(st wire.ClusterStatus, minEpoch uint64, start bool) string {
	if st.Epoch < minEpoch {
		return fmt.Sprintf("the leader is still of epoch %d", st.Epoch)
	}
	alive := 0
	for _, w := range st.Workers {
		if w.State == wire.WorkerAlive {
			alive++
		}
	}
	if alive != len(ch.cl.Workers) {
		return fmt.Sprintf("%d of %d workers ALIVE", alive, len(ch.cl.Workers))
	}
	for _, la := range ch.long {
		var app *wire.AppStatus
		for i := range st.ActiveApps {
			if st.ActiveApps[i].Name == la.name {
				app = &st.ActiveApps[i]
			}
		}
		if app == nil {
			return la.name + " is not active"
		}
		running := 0
		for _, e := range app.Executors {
			if e.State == wire.ExecutorRunning {
				running++
			}
		}
		switch {
		case la.strict && (app.State != wire.AppRunning || running != la.executors),
			!la.strict && (app.State == wire.AppUnknown || start && running == 0):
			return fmt.Sprintf("%s is %s with %d executors RUNNING", la.name, app.State, running)
		}
	}
	return ""
}

// caughtUp waits until m answers as a follower of the current leader's
// epoch, or leads.
func (ch *chaos) caughtUp(m *testcluster.Master) error {
	ctx, cancel := context.WithTimeout(context.Background(), backWithin)
	defer cancel()
	last := ""
	if poll.Until(ctx, 50*time.Millisecond, func() bool {
		if ctx.Err() != nil {
			return false // past the deadline: the last answer stands
		}
		qctx, qcancel := context.WithTimeout(ctx, time.Second)
		defer qcancel()
		_, lst, lerr := ch.cl.Leader(qctx)
		st, err := ch.cl.Status(qctx, m)
		switch {
		case lerr != nil:
			last = lerr.Error()
		case err != nil:
			last = err.Error()
		case st.Epoch == lst.Epoch:
			return true
		default:
			last = fmt.Sprintf("%s at epoch %d (%s), the leader at %d", m.ID, st.Epoch, st.View, lst.Epoch)
		}
		return false
	}) {
		return nil
	}
	// Stuck: have it print every goroutine's stack into its log.
	m.Proc().Signal(syscall.SIGQUIT)
	return fmt.Errorf("%s did not catch up within %s (its goroutines are in its log): %s", m.ID, backWithin, last)
}

// describeMore is r's other measures, for the run's log.
// timeline notes when each new answer of a poll was first seen.
type timeline struct {
	parts []string
	last  string
}

func (tl *timeline) saw(t0 time.Time, why string) {
	if tl == nil {
		return
	}
	if why == "" {
		why = "back"
	}
	// The counts in an answer change while it is the same step: compare
	// without digits.
	key := strings.Map(func(r rune) rune {
		if r >= '0' && r <= '9' {
			return -1
		}
		return r
	}, why)
	if key == tl.last {
		return
	}
	tl.last = key
	tl.parts = append(tl.parts, fmt.Sprintf("+%s %s", ms(time.Since(t0)), why))
}

func (tl *timeline) String() string { return strings.Join(tl.parts, "; ") }

func (r faultResult) describeMore() string {
	var parts []string
	for _, m := range r.more {
		parts = append(parts, fmt.Sprintf("%s %s", m.name, m))
	}
	if r.steps != "" {
		parts = append(parts, "steps: "+r.steps)
	}
	if len(parts) == 0 {
		return ""
	}
	return "; " + strings.Join(parts, ", ")
}
