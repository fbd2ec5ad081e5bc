package chaos

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/berth-cluster/berth/client"
	"github.com/berth-cluster/berth/internal/poll"
	"github.com/berth-cluster/berth/testkit/testcluster"
	"github.com/berth-cluster/berth/wire"
)

// leaderWatch asks every master for its view, all along, and records the
// answers given as the leader's, to check that two masters never answered
// as the leader at once.
type leaderWatch struct {
	mu  sync.Mutex
	obs []leaderObs
	n   int // answers seen, of any view
}

// leaderObs is one answer given as the leader's view.
type leaderObs struct {
	master     string
	epoch      uint64
	start, end time.Time
}

func (lw *leaderWatch) run(ctx context.Context, cl *testcluster.Cluster) {
	for ctx.Err() == nil {
		var wg sync.WaitGroup
		for _, m := range cl.Masters {
			wg.Add(1)
			go func() {
				defer wg.Done()
				qctx, cancel := context.WithTimeout(ctx, time.Second)
				defer cancel()
				start := time.Now()
				st, err := cl.Status(qctx, m)
				end := time.Now()
				if err != nil {
					return
				}
				lw.mu.Lock()
				defer lw.mu.Unlock()
				lw.n++
				if st.View == wire.ViewLeader {
					lw.obs = append(lw.obs, leaderObs{master: m.ID, epoch: st.Epoch, start: start, end: end})
				}
			}()
		}
		wg.Wait()
		poll.Sleep(ctx, 25*time.Millisecond)
	}
}

// violations lists the pairs of leader answers that no single leader at a
// time could have given: an answer with an older epoch than one completed
// before it started, or one epoch answered by two masters.
func (lw *leaderWatch) violations() []string {
	lw.mu.Lock()
	obs := slices.Clone(lw.obs)
	lw.mu.Unlock()
	var out []string
	byEpoch := map[uint64]string{}
	for _, o := range obs {
		if m, ok := byEpoch[o.epoch]; ok && m != o.master {
			out = append(out, fmt.Sprintf("epoch %d answered as the leader by %s and %s", o.epoch, m, o.master))
		}
		byEpoch[o.epoch] = o.master
	}
	byEnd := slices.Clone(obs)
	sort.Slice(byEnd, func(i, j int) bool { return byEnd[i].end.Before(byEnd[j].end) })
	sort.Slice(obs, func(i, j int) bool { return obs[i].start.Before(obs[j].start) })
	var newest leaderObs // highest epoch among answers completed so far
	k := 0
	for _, o := range obs {
		for ; k < len(byEnd) && byEnd[k].end.Before(o.start); k++ {
			if byEnd[k].epoch > newest.epoch {
				newest = byEnd[k]
			}
		}
		if o.epoch < newest.epoch {
			out = append(out, fmt.Sprintf("%s answered as the leader of epoch %d at %s, after %s had answered for epoch %d",
				o.master, o.epoch, o.start.Format("15:04:05.000"), newest.master, newest.epoch))
		}
	}
	return out
}

// steady reports whether one master, of one epoch, answered as the leader
// from a to b: some answer began by a, some ended within the last second
// before b, and none in between came from another master or epoch.
func (lw *leaderWatch) steady(a, b time.Time) bool {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	var who string
	var epoch uint64
	before, after := false, false
	for _, o := range lw.obs {
		if o.end.Before(a.Add(-time.Second)) || o.start.After(b) {
			continue
		}
		if who == "" {
			who, epoch = o.master, o.epoch
		} else if o.master != who || o.epoch != epoch {
			return false
		}
		before = before || !o.start.After(a)
		after = after || !o.end.Before(b.Add(-time.Second))
	}
	return before && after
}

// leaderAt is the master that last answered as the leader before t.
func (lw *leaderWatch) leaderAt(t time.Time) string {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	var last leaderObs
	for _, o := range lw.obs {
		if !o.start.After(t) && o.start.After(last.start) {
			last = o
		}
	}
	return cmp.Or(last.master, "none")
}

func (lw *leaderWatch) counts() (answers, asLeader int) {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	return lw.n, len(lw.obs)
}

// pidWatch samples the executor processes of the long-running apps and of
// the tenants' bursts, each a `sleep` whose arguments end with its
// executor id and its app's marker. An executor keeps one pid from its
// start to its end, and ends once. A strict app's executors (its queue may
// not be preempted) must never end, nor new ones start, but for those
// lost with their worker (a worker's outage), each replaced once; any
// other executor that ends must have been preempted (the masters' logs,
// its app's events or its status say so), lost with its worker, or its
// app killed. pidWatch also reads those apps' status from the leader all
// along: an executor that ended is seen ended one way only, never running
// again, and one that ended while its app ran says it was preempted, and
// for what, or that its worker was lost; an app never lists more live
// executors than it asked for (none is counted twice). An executor lost
// with its worker must be gone once the worker is back.
type pidWatch struct {
	mu      sync.Mutex
	apps    map[string]*watched // by marker
	execs   map[execRef]*execSeen
	sampled bool // the first sample is the strict apps' baseline
	changes []string
	workers map[int]string // the workers' pids → their ids
	outs    []*workerOut   // the workers' outages
}

type execRef struct {
	marker string
	exec   int
}

// watched is an app whose executors are watched.
type watched struct {
	name, marker string
	id           string // once known
	strict       bool
	most         int  // the most executors it asked for: it may list no more live
	ended        bool // its status was read as ended: no more status reads
	twice        bool // it was seen listing more: said once
}

// execSeen is what was seen of one executor.
type execSeen struct {
	pid         int // 0: seen in a status only
	first, gone time.Time
	// The first end its app's status showed, and whether the app was
	// then active.
	final, message string
	appActive      bool
	worker         string // where it runs: its process's worker, or its status's
	late           bool   // first seen after the first sample
}

func newPidWatch() *pidWatch {
	return &pidWatch{apps: map[string]*watched{}, execs: map[execRef]*execSeen{}, workers: map[int]string{}}
}

// add watches the executors of the app named name, whose executors' command
// lines end with marker, and which asks for at most most executors.
func (pw *pidWatch) add(marker, name string, strict bool, most int) {
	pw.mu.Lock()
	defer pw.mu.Unlock()
	pw.apps[marker] = &watched{name: name, marker: marker, strict: strict, most: most}
}

// setWorkers tells which processes are the workers, so that each
// executor's worker is known from its process's ancestors.
func (pw *pidWatch) setWorkers(ws []*testcluster.Worker) {
	pw.mu.Lock()
	defer pw.mu.Unlock()
	for _, w := range ws {
		pw.workers[w.Pid()] = w.ID
	}
}

// addOut records a worker's outage as it begins.
func (pw *pidWatch) addOut(o *workerOut) {
	pw.mu.Lock()
	defer pw.mu.Unlock()
	pw.outs = append(pw.outs, o)
}

// outBack records when the worker of o was seen ALIVE again.
func (pw *pidWatch) outBack(o *workerOut, at time.Time) {
	pw.mu.Lock()
	defer pw.mu.Unlock()
	o.back = at
}

// lostWith is the outage e was lost in (nil: none): its worker's, if it
// ran there when the outage began (it had to end once the worker was
// back), or if its status says it was LOST with its worker (one placed
// there during the outage).
func (pw *pidWatch) lostWith(e *execSeen) *workerOut {
	for _, o := range pw.outs {
		if e.worker != o.worker {
			continue
		}
		ranThen := e.pid != 0 && e.first.Before(o.from) && (e.gone.IsZero() || !e.gone.Before(o.from))
		saysLost := e.final == string(wire.ExecutorLost) && strings.HasPrefix(e.message, "worker lost")
		if ranThen || saysLost {
			return o
		}
	}
	return nil
}

// learn gives the id of the app of marker.
func (pw *pidWatch) learn(marker, id string) {
	pw.mu.Lock()
	defer pw.mu.Unlock()
	if a := pw.apps[marker]; a != nil {
		a.id = id
	}
}

// pidsContaining lists the processes whose command line contains s.
func pidsContaining(s string) []int {
	var out []int
	for _, p := range testcluster.Processes() {
		if strings.Contains(p.Cmdline, s) && p.Pid != os.Getpid() {
			out = append(out, p.Pid)
		}
	}
	return out
}

// execProc is an executor's process, and the worker it runs under ("":
// none found).
type execProc struct {
	pid    int
	worker string
}

// executorProcs finds the executors of the watched apps: the processes
// whose command line is `sleep N EXECUTOR_ID MARKER` (a root worker runs
// it by its full path, /usr/bin/sleep; a forked child not
// yet exec'd has its parent's command line: skipped), each with the
// worker among its ancestors (workers: the workers' pids).
func executorProcs(markers map[string]bool, workers map[int]string) map[execRef]execProc {
	out := map[execRef]execProc{}
	ps := testcluster.Processes()
	cmdlineOf, parentOf := map[int]string{}, map[int]int{}
	for _, p := range ps {
		cmdlineOf[p.Pid], parentOf[p.Pid] = p.Cmdline, p.PPid
	}
	workerOf := func(pid int) string {
		for range 8 {
			if pid = parentOf[pid]; pid <= 1 {
				break
			}
			if id, ok := workers[pid]; ok {
				return id
			}
		}
		return ""
	}
	for _, p := range ps {
		f := strings.Fields(p.Cmdline)
		if len(f) != 4 || filepath.Base(f[0]) != "sleep" || !markers[f[3]] || cmdlineOf[p.PPid] == p.Cmdline {
			continue
		}
		if n, err := strconv.Atoi(f[2]); err == nil {
			out[execRef{f[3], n}] = execProc{p.Pid, workerOf(p.Pid)}
		}
	}
	return out
}

func (pw *pidWatch) run(ctx context.Context) {
	for {
		pw.sample()
		if !poll.Sleep(ctx, 200*time.Millisecond) {
			return
		}
	}
}

// baseline samples until every strict app's executors are seen running
// (its status may say RUNNING before the worker's child has exec'd its
// command: one sample then missed an executor, seen later as a start
// more than its losses), then makes later starts count as late.
func (pw *pidWatch) baseline(within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		pw.scan()
		if missing := pw.strictMissing(); missing == "" {
			break
		} else if time.Now().After(deadline) {
			return fmt.Errorf("the strict apps' baseline: %s not all running after %s", missing, within)
		}
		time.Sleep(50 * time.Millisecond) // polling with a deadline
	}
	pw.mu.Lock()
	pw.sampled = true
	pw.mu.Unlock()
	return nil
}

// strictMissing names a strict app with fewer executors' processes seen
// than it asked for, "" if none.
func (pw *pidWatch) strictMissing() string {
	pw.mu.Lock()
	defer pw.mu.Unlock()
	seen := map[string]int{}
	for ref, e := range pw.execs {
		if e.pid != 0 && e.gone.IsZero() {
			seen[ref.marker]++
		}
	}
	for m, a := range pw.apps {
		if a.strict && seen[m] < a.most {
			return fmt.Sprintf("%s (%d of %d)", a.name, seen[m], a.most)
		}
	}
	return ""
}

func (pw *pidWatch) sample() {
	pw.scan()
	pw.mu.Lock()
	pw.sampled = true
	pw.mu.Unlock()
}

// scan reads the executors' processes once.
func (pw *pidWatch) scan() {
	pw.mu.Lock()
	markers := map[string]bool{}
	for m := range pw.apps {
		markers[m] = true
	}
	workers := maps.Clone(pw.workers)
	pw.mu.Unlock()
	procs := executorProcs(markers, workers)
	now := time.Now()
	pw.mu.Lock()
	defer pw.mu.Unlock()
	at := now.Format("15:04:05.000")
	// A strict app's executor that starts or ends is judged at the end
	// (violations), once the workers' outages are known.
	for ref, p := range procs {
		a, pid := pw.apps[ref.marker], p.pid
		switch e := pw.execs[ref]; {
		case e == nil:
			pw.execs[ref] = &execSeen{pid: pid, first: now, worker: p.worker, late: pw.sampled}
		case e.pid == 0:
			e.pid, e.first, e.late = pid, now, pw.sampled
			e.worker = cmp.Or(p.worker, e.worker)
		case e.pid != pid:
			pw.changes = append(pw.changes, fmt.Sprintf("%s: executor %d has pid %d at %s, had %d: started twice", a.name, ref.exec, pid, at, e.pid))
			e.pid = pid
		case !e.gone.IsZero():
			pw.changes = append(pw.changes, fmt.Sprintf("%s: executor %d (pid %d) runs again at %s, after its process was gone at %s", a.name, ref.exec, pid, at, e.gone.Format("15:04:05.000")))
			e.gone = time.Time{}
		}
	}
	for ref, e := range pw.execs {
		if _, ok := procs[ref]; ok || e.pid == 0 || !e.gone.IsZero() {
			continue
		}
		e.gone = now
	}
}

// watchStatus reads the status of the watched apps, from the leader, all
// along.
func (pw *pidWatch) watchStatus(ctx context.Context, c *client.Client) {
	poll.Every(ctx, 500*time.Millisecond, func() { pw.readStatus(ctx, c) })
}

func (pw *pidWatch) readStatus(ctx context.Context, c *client.Client) {
	pw.mu.Lock()
	var apps []*watched
	for _, a := range pw.apps {
		if a.id != "" && !a.ended {
			apps = append(apps, a)
		}
	}
	pw.mu.Unlock()
	for _, a := range apps {
		rctx, cancel := context.WithTimeout(ctx, time.Second)
		st, err := c.App(rctx, a.id)
		cancel()
		if err != nil {
			continue
		}
		pw.mu.Lock()
		a.ended = st.State.Finished()
		live := 0
		for _, x := range st.Executors {
			if !x.State.Finished() {
				live++
			}
		}
		if a.most > 0 && live > a.most && !a.twice {
			a.twice = true
			var execs []string
			for _, x := range st.Executors {
				execs = append(execs, fmt.Sprintf("%d %s on %s", x.ID, x.State, x.WorkerID))
			}
			pw.changes = append(pw.changes, fmt.Sprintf("%s lists %d live executors at %s, more than the %d it asked for (%s): one is counted twice",
				a.name, live, time.Now().Format("15:04:05.000"), a.most, strings.Join(execs, ", ")))
		}
		for _, x := range st.Executors {
			ref := execRef{a.marker, x.ID}
			e := pw.execs[ref]
			if e == nil {
				e = &execSeen{late: true}
				pw.execs[ref] = e
			}
			e.worker = cmp.Or(e.worker, x.WorkerID)
			switch {
			case x.State.Finished() && e.final == "":
				e.final, e.message, e.appActive = string(x.State), x.Message, !st.State.Finished()
			case x.State.Finished() && (e.final != string(x.State) || e.message != x.Message):
				pw.changes = append(pw.changes, fmt.Sprintf("%s: executor %d ended twice: %s (%q), then %s (%q)", a.name, x.ID, e.final, e.message, x.State, x.Message))
				e.final, e.message = string(x.State), x.Message
			case !x.State.Finished() && e.final != "":
				pw.changes = append(pw.changes, fmt.Sprintf("%s: executor %d is %s after it ended %s (%q)", a.name, x.ID, x.State, e.final, e.message))
			}
		}
		pw.mu.Unlock()
	}
}

// settle waits (within ctx) until no executor of an app in ended runs.
func (pw *pidWatch) settle(ctx context.Context, ended func(marker string) bool) {
	poll.Until(ctx, 200*time.Millisecond, func() bool {
		pw.sample()
		pw.mu.Lock()
		defer pw.mu.Unlock()
		for ref, e := range pw.execs {
			if e.pid != 0 && e.gone.IsZero() && ended(ref.marker) {
				return false
			}
		}
		return true
	})
}

// preemption is what the masters' logs and the apps' events say of the
// preemption of one executor (key "APP/EXECUTOR").
type preemption struct {
	decided []time.Time // "preempting an executor" in a master's log
	events  int         // executorPreempted events in its app's client's log
}

var (
	preemptingLine = regexp.MustCompile(`^time=(\S+) .*msg="preempting an executor".* app=(\S+) executor=(\d+)`)
	preemptedEvent = regexp.MustCompile(`executorPreempted\s+exec=(\d+)`)
)

// preemptions reads the preemptions in the masters' logs and the long
// apps' clients' logs.
func (ch *chaos) preemptions() map[string]*preemption {
	out := map[string]*preemption{}
	of := func(key string) *preemption {
		if out[key] == nil {
			out[key] = &preemption{}
		}
		return out[key]
	}
	for _, m := range ch.cl.Masters {
		for _, line := range m.Proc().LogMatches(preemptingLine) {
			f := preemptingLine.FindStringSubmatch(line)
			t, _ := time.Parse(time.RFC3339Nano, f[1])
			p := of(f[2] + "/" + f[3])
			p.decided = append(p.decided, t)
		}
	}
	for _, la := range ch.long {
		for _, line := range la.client.LogMatches(preemptedEvent) {
			of(la.id+"/"+preemptedEvent.FindStringSubmatch(line)[1]).events++
		}
	}
	return out
}

// violations lists what the watch saw go wrong; with the preemptions on
// record and when each app was killed (zero: it was not; ok false: its
// registration's outcome is unknown), it checks each executor's end.
func (pw *pidWatch) violations(pre map[string]*preemption, killedAt func(marker string) (time.Time, bool), end time.Time) (out []string, preempted int) {
	pw.mu.Lock()
	defer pw.mu.Unlock()
	out = slices.Clone(pw.changes)
	refs := slices.SortedFunc(maps.Keys(pw.execs), func(a, b execRef) int {
		return cmp.Or(strings.Compare(a.marker, b.marker), a.exec-b.exec)
	})
	// A strict app's executors: none ends but with its worker, and no more
	// start than were lost so.
	lostStrict, lateStrict := map[string]int{}, map[string][]string{}
	for _, ref := range refs {
		e, a := pw.execs[ref], pw.apps[ref.marker]
		if !a.strict {
			continue
		}
		lost := pw.lostWith(e)
		if lost != nil {
			lostStrict[a.marker]++
		}
		if !e.gone.IsZero() && lost == nil {
			out = append(out, fmt.Sprintf("%s: executor %d (pid %d, on %s) gone at %s; its executors must never end but with their worker",
				a.name, ref.exec, e.pid, cmp.Or(e.worker, "?"), e.gone.Format("15:04:05.000")))
		}
		if e.late {
			lateStrict[a.marker] = append(lateStrict[a.marker], fmt.Sprintf("%d (pid %d, on %s, at %s)", ref.exec, e.pid, cmp.Or(e.worker, "?"), e.first.Format("15:04:05.000")))
		}
	}
	for marker, late := range lateStrict {
		if len(late) > lostStrict[marker] {
			out = append(out, fmt.Sprintf("%s: executors %s started, %d more than its %d lost with their worker; its executors must never change otherwise",
				pw.apps[marker].name, strings.Join(late, ", "), len(late)-lostStrict[marker], lostStrict[marker]))
		}
	}
	for _, ref := range refs {
		e, a := pw.execs[ref], pw.apps[ref.marker]
		if a.id == "" {
			continue // a registration of unknown outcome: its app may end by its lease
		}
		name := fmt.Sprintf("%s (%s): executor %d", a.name, a.id, ref.exec)
		lost := pw.lostWith(e)
		if lost != nil && e.pid != 0 && e.gone.IsZero() {
			out = append(out, fmt.Sprintf("%s (pid %d) lost with %s (%s at %s) still runs, its worker ALIVE again since %s",
				name, e.pid, lost.worker, lost.kind, lost.from.Format("15:04:05.000"), lost.back.Format("15:04:05.000")))
		}
		p := pre[a.id+"/"+strconv.Itoa(ref.exec)]
		saysPreempted := e.final == string(wire.ExecutorKilled) && strings.HasPrefix(e.message, "preempted ")
		if p != nil {
			if len(p.decided) > 1 {
				out = append(out, fmt.Sprintf("%s preempted %d times (masters' logs at %s)", name, len(p.decided), times(p.decided)))
			}
			if p.events > 1 {
				out = append(out, fmt.Sprintf("%s: its app was told executorPreempted %d times", name, p.events))
			}
		}
		// An executor whose launch was committed but never reached its
		// worker before the leader changed (no process was ever seen) is
		// LOST by the next leader's recovery: nothing ran.
		neverRan := e.final == string(wire.ExecutorLost) && e.pid == 0 && e.message == "not running on its worker after the master changed"
		// One whose launch its worker refused, its disk full before its
		// heartbeat said so (worker disk full), never ran either: LOST and
		// replaced elsewhere.
		refusedForDisk := e.final == string(wire.ExecutorLost) && e.pid == 0 && strings.HasPrefix(e.message, "not started: work dir ")
		neverRan = neverRan || refusedForDisk
		if e.final != "" && e.appActive && !saysPreempted && lost == nil && !neverRan {
			out = append(out, fmt.Sprintf("%s ended %s while its app ran, not preempted: %q", name, e.final, e.message))
		}
		isPreempted := p != nil || saysPreempted
		if isPreempted {
			preempted++
			if e.final != "" && !saysPreempted && lost == nil && e.appActive { // an app killed meanwhile ends it KILLED by its own end
				out = append(out, fmt.Sprintf("%s was preempted, but its record says %s: %q", name, e.final, e.message))
			}
		}
		kill, known := killedAt(ref.marker)
		switch {
		case e.pid == 0:
		case e.gone.IsZero() && p != nil && len(p.decided) > 0 && end.Sub(p.decided[0]) > 5*time.Second:
			out = append(out, fmt.Sprintf("%s (pid %d) preempted at %s still runs", name, e.pid, times(p.decided)))
		case e.gone.IsZero() && !kill.IsZero():
			out = append(out, fmt.Sprintf("%s (pid %d) still runs, its app killed at %s", name, e.pid, kill.Format("15:04:05.000")))
		case e.gone.IsZero(), a.strict, isPreempted, !known, lost != nil:
		case kill.IsZero() || e.gone.Before(kill):
			out = append(out, fmt.Sprintf("%s (pid %d) gone at %s, neither preempted nor its app killed (its status: %s %q)",
				name, e.pid, e.gone.Format("15:04:05.000"), cmp.Or(e.final, "not seen ended"), e.message))
		}
	}
	return out, preempted
}

func times(ts []time.Time) string {
	var s []string
	for _, t := range ts {
		s = append(s, t.Format("15:04:05.000"))
	}
	return strings.Join(s, ", ")
}
