package chaos

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/berth-cluster/berth/client"
	"github.com/berth-cluster/berth/internal/poll"
	"github.com/berth-cluster/berth/testkit/testcluster"
	"github.com/berth-cluster/berth/wire"
)

// The audit log under faults. GET /v1/audit is answered by any master from
// its replica: not a linearizable read, but each answer must be a run of
// one sequence, the log's. auditWatch asks every master all along (each
// answer keeps the entries of a window reaching back past the previous
// answer, so that none is missed while a master is down or the leader
// changes) and lines the answers up into that sequence: an answer that
// does not fit (an entry in another place, or one no answer had where
// others had their neighbours) is two masters disagreeing. After the run,
// every master must answer the same log once it caught up. The history is
// then checked against the sequence (checkAudit).

// auditWindow is how far back before the previous answer each answer
// reaches; auditAnswerMax is the most entries GET /v1/audit gives.
const (
	auditWindow    = 20 * time.Second
	auditEvery     = 3 * time.Second
	auditAnswerMax = 10_000
)

type auditWatch struct {
	masters []*testcluster.Master
	clients []*client.Client // one per master, asking it alone

	mu       sync.Mutex
	seq      []wire.AuditEntry
	pos      map[string]int // entryKey → index in seq
	lastOK   time.Time      // when the last harvest that a master answered began
	answers  int
	problems []string
	final    bool // every master answered the same log at the end
}

func newAuditWatch(ch *chaos) *auditWatch {
	aw := &auditWatch{masters: ch.cl.Masters, pos: map[string]int{}}
	for _, m := range ch.cl.Masters {
		c, err := client.New([]string{m.URL}, secret, client.WithRequestTimeout(1500*time.Millisecond),
			client.WithRetryBudget(500*time.Millisecond), ch.cl.PKI.ClientOption())
		if err != nil {
			ch.t.Fatal(err)
		}
		aw.clients = append(aw.clients, c)
	}
	return aw
}

// entryKey identifies an entry: its time is the leader's clock to the
// nanosecond, which no two entries share in practice.
func entryKey(e wire.AuditEntry) string {
	return fmt.Sprintf("%d|%s|%s|%s|%s|%d", e.Time.UnixNano(), e.Principal, e.Route, e.Target, e.Outcome, e.Status)
}

func describeEntry(e wire.AuditEntry) string {
	return fmt.Sprintf("%s %s %s %s → %s (%d)", e.Time.Format("15:04:05.000000"), e.Principal, e.Route, e.Target, e.Outcome, e.Status)
}

func (aw *auditWatch) run(ctx context.Context) {
	poll.Every(ctx, auditEvery, func() { aw.harvest(ctx) })
}

// harvest asks every master for the entries since a little before the
// previous harvest.
func (aw *auditWatch) harvest(ctx context.Context) {
	start := time.Now()
	aw.mu.Lock()
	var since time.Duration // 0: all
	if !aw.lastOK.IsZero() {
		since = start.Sub(aw.lastOK) + auditWindow
	}
	aw.mu.Unlock()
	ok := false
	for i, c := range aw.clients {
		a, err := c.Audit(ctx, since, "")
		if err != nil {
			continue
		}
		ok = true
		es := a.Entries
		if since > 0 {
			// The answer keeps the entries from start-since on, by their
			// time: drop a margin, where an entry written a little out of
			// order might be cut.
			cut := start.Add(-since + 2*time.Second)
			k := 0
			for k < len(es) && es[k].Time.Before(cut) {
				k++
			}
			es = es[k:]
		}
		aw.merge(aw.masters[i].ID, es, len(a.Entries) >= auditAnswerMax)
	}
	if ok {
		aw.mu.Lock()
		aw.lastOK = start
		aw.mu.Unlock()
	}
}

// merge lines up the answer of master m with the sequence so far; full:
// the answer was cut at auditAnswerMax (its oldest part may be missing).
func (aw *auditWatch) merge(m string, es []wire.AuditEntry, full bool) {
	aw.mu.Lock()
	defer aw.mu.Unlock()
	aw.answers++
	if len(es) == 0 {
		return
	}
	first, p := -1, -1
	for i, e := range es {
		if j, ok := aw.pos[entryKey(e)]; ok {
			first, p = i, j
			break
		}
	}
	switch {
	case first == -1 && len(aw.seq) > 0 && !es[0].Time.After(aw.seq[len(aw.seq)-1].Time):
		aw.problem("master %s answered %d entries none of which any answer had, from %s, before the newest known (%s)",
			m, len(es), describeEntry(es[0]), describeEntry(aw.seq[len(aw.seq)-1]))
		return
	case first == -1 && len(aw.seq) > 0:
		aw.problem("audit harvest: master %s answered entries from %s on, none known: the entries between %s and them were never seen (full answer: %v)",
			m, describeEntry(es[0]), describeEntry(aw.seq[len(aw.seq)-1]), full)
		first, p = 0, len(aw.seq)
	case first == -1:
		first, p = 0, 0
	case first > 0 && p > 0:
		aw.problem("master %s has %d entries no other answer had, before %s (the sequence has %s before it): first %s",
			m, first, describeEntry(es[first]), describeEntry(aw.seq[p-1]), describeEntry(es[0]))
		return
	case first > 0: // older than anything known: the log's beginning
		aw.seq = append(slices.Clone(es[:first]), aw.seq...)
		aw.reindex()
		p += first
	}
	for j := first; j < len(es); j++ {
		k := p + j - first
		if k < len(aw.seq) {
			if entryKey(aw.seq[k]) != entryKey(es[j]) {
				aw.problem("master %s disagrees with the audit log so far at its entry %d: it has %s where the log has %s",
					m, j, describeEntry(es[j]), describeEntry(aw.seq[k]))
				return
			}
			continue
		}
		aw.pos[entryKey(es[j])] = len(aw.seq)
		aw.seq = append(aw.seq, es[j])
	}
}

func (aw *auditWatch) reindex() {
	clear(aw.pos)
	for i, e := range aw.seq {
		aw.pos[entryKey(e)] = i
	}
}

func (aw *auditWatch) problem(format string, args ...any) {
	if len(aw.problems) < 20 {
		aw.problems = append(aw.problems, fmt.Sprintf(format, args...))
	}
}

// finish waits (within ctx) until every master answers the same log (the
// newest auditAnswerMax entries), and lines those answers up too.
func (aw *auditWatch) finish(ctx context.Context) {
	var last []string
	done := poll.Until(ctx, 500*time.Millisecond, func() bool {
		var answers []wire.Audit
		last = nil
		for i, c := range aw.clients {
			actx, cancel := context.WithTimeout(ctx, 5*time.Second)
			a, err := c.Audit(actx, 0, "")
			cancel()
			if err != nil {
				last = append(last, fmt.Sprintf("%s: %v", aw.masters[i].ID, err))
				return false
			}
			answers = append(answers, a)
			n := len(a.Entries)
			tail := "none"
			if n > 0 {
				tail = describeEntry(a.Entries[n-1])
			}
			last = append(last, fmt.Sprintf("%s: %d entries, the newest %s", aw.masters[i].ID, n, tail))
		}
		for i, a := range answers {
			aw.merge(aw.masters[i].ID, a.Entries, len(a.Entries) >= auditAnswerMax)
		}
		for _, a := range answers[1:] {
			if !slices.EqualFunc(a.Entries, answers[0].Entries, func(x, y wire.AuditEntry) bool { return entryKey(x) == entryKey(y) }) {
				return false
			}
		}
		return true
	})
	aw.mu.Lock()
	defer aw.mu.Unlock()
	aw.final = done
	if !done {
		aw.problem("the masters' audit logs still differ after the run: %s", strings.Join(last, "; "))
	}
}

// auditFigures is what checkAudit found, for the report.
type auditFigures struct {
	final                  bool // every master answered the same log at the end
	entries, answers       int
	checked                int // acknowledged writes matched with their entries
	refusals, refusalsSeen int // refusals made under one steady leader; of them audited
	refusalsElse           int // refusals made around a leader change (not required)
	// deletesFoundGone: deletes answered as done whose retry found the
	// queue or tenant gone (recorded as that 404), none recorded ok.
	deletesFoundGone int
}

// checkAudit checks the history against the audit log: every acknowledged
// write has its entry (its principal, route and target, outcome "ok"),
// once for a registration and for an app's kill; every "ok" entry on the
// workload's apps, drivers, queues and tenants was made by a request of
// that principal that may have done it (acknowledged, of unknown outcome,
// or refused after an attempt of unknown outcome, but never forbidden),
// and none changes an app after its kill; every refusal made while one
// leader led steadily from before it until well after is audited with
// its status.
func (aw *auditWatch) checkAudit(history []porcupine.Operation, rec *recorder, lw *leaderWatch) (fig auditFigures, problems []string) {
	aw.mu.Lock()
	seq := slices.Clone(aw.seq)
	fig.entries, fig.answers, fig.final = len(seq), aw.answers, aw.final
	problems = slices.Clone(aw.problems)
	aw.mu.Unlock()

	type rt struct{ route, target string }
	type prt struct{ principal, route, target string }
	ok := map[prt][]int{}               // "ok" entries by principal, route, target: their places in seq
	okAny := map[rt][]int{}             // by route and target
	refused := map[string][]time.Time{} // refusal entries' times: principal|route|target|status → in the log's order
	for i, e := range seq {
		if e.Outcome == "ok" {
			ok[prt{e.Principal, e.Route, e.Target}] = append(ok[prt{e.Principal, e.Route, e.Target}], i)
			okAny[rt{e.Route, e.Target}] = append(okAny[rt{e.Route, e.Target}], i)
			if e.Status != 200 {
				problems = append(problems, "audit: an ok entry with status "+fmt.Sprint(e.Status)+": "+describeEntry(e))
			}
		} else {
			target := e.Target
			if strings.HasPrefix(target, "name:") || strings.HasPrefix(target, "command:") {
				target = "" // a refused submission names what it asked for; the history knows no id
			}
			k := fmt.Sprintf("%s|%s|%s|%d", e.Principal, e.Route, target, e.Status)
			refused[k] = append(refused[k], e.Time)
		}
		if strings.HasPrefix(e.Principal, "tenant:") && e.Tenant != strings.TrimPrefix(e.Principal, "tenant:") {
			problems = append(problems, "audit: a tenant's entry names another tenant: "+describeEntry(e)+" tenant "+e.Tenant)
		}
	}
	// What each op would be recorded as.
	api := wire.MasterAPI
	routeOf := map[opKind]string{
		opRegister: api.RegisterApp.Mux(), opKill: api.KillApp.Mux(), opLimit: api.SetExecutorLimit.Mux(),
		opSubmitDriver: api.SubmitDriver.Mux(), opKillDriver: api.KillDriver.Mux(),
		opPutQueue: api.PutQueue.Mux(), opDeleteQueue: api.DeleteQueue.Mux(),
		opCreateTenant: api.CreateTenant.Mux(), opDeleteTenant: api.DeleteTenant.Mux(),
	}
	idOfKey := map[string]string{} // a submission's id, once answered
	for _, op := range history {
		in, out := op.Input.(input), op.Output.(output)
		if (in.kind == opRegister || in.kind == opSubmitDriver) && !out.unknown && out.status == 0 {
			idOfKey[in.key] = out.id
		}
	}
	targetOf := func(in input, out output) string {
		switch in.kind {
		case opRegister, opSubmitDriver:
			if out.unknown || out.status != 0 {
				return ""
			}
			return out.id
		}
		return in.id
	}
	miss := func(format string, args ...any) {
		problems = append(problems, "audit: "+fmt.Sprintf(format, args...))
	}

	// Acknowledged writes, and the requests that may have written.
	ackedBy := map[prt]int{}
	mayHave := map[prt]bool{}
	for _, op := range history {
		in, out := op.Input.(input), op.Output.(output)
		route, writes := routeOf[in.kind]
		if !writes {
			continue
		}
		k := prt{in.by, route, targetOf(in, out)}
		if in.kind == opRegister || in.kind == opSubmitDriver {
			k.target = idOfKey[in.key]
		}
		if out.unknown || out.status != 403 {
			mayHave[k] = true
		}
		if out.unknown || out.status != 0 {
			continue
		}
		fig.checked++
		switch in.kind {
		case opRegister, opSubmitDriver:
			if ackedBy[k] == 0 { // repeats are answered from the first one
				n := len(ok[k])
				switch {
				case n == 0 && len(okAny[rt{route, k.target}]) > 0:
					miss("%s acknowledged, but its entry names another principal: %s", model.DescribeOperation(in, out), describeEntry(seq[okAny[rt{route, k.target}][0]]))
				case n == 0:
					miss("%s acknowledged, but no entry %s %s %s ok", model.DescribeOperation(in, out), in.by, route, k.target)
				case n > 1:
					miss("%s recorded %d times: %s", model.DescribeOperation(in, out), n, describeEntries(seq, ok[k]))
				}
			}
		case opKill, opKillDriver, opDeleteQueue, opDeleteTenant, opCreateTenant:
			// One write, made by this request or by an earlier one that
			// the answer joined (a kill in flight, a delete of unknown
			// outcome, a creation whose answer was lost).
			if len(okAny[rt{route, k.target}]) > 0 {
				break
			}
			// A kill of a driver that had ended otherwise (ERROR, its
			// worker lost) is answered with that end and writes nothing.
			if in.kind == opKillDriver && out.ended && out.state != string(wire.DriverKilled) {
				break
			}
			// A delete whose first attempt's outcome was unknown, and
			// whose retry found the queue or tenant gone, is answered as
			// done (the client takes the earlier attempt to have done
			// it): when that attempt had not, its retry's refusal (404)
			// is all there is to record.
			if in.kind == opDeleteQueue || in.kind == opDeleteTenant {
				k404 := fmt.Sprintf("%s|%s|%s|%d", in.by, route, k.target, 404)
				call, ret := rec.at(op.Call), rec.at(op.Return)
				if slices.ContainsFunc(refused[k404], func(t time.Time) bool { return !t.Before(call) && !t.After(ret) }) {
					fig.deletesFoundGone++
					break
				}
			}
			miss("%s acknowledged at %s, but no entry %s %s ok", model.DescribeOperation(in, out), rec.at(op.Return).Format("15:04:05.000"), route, k.target)
		default: // limits and queue settings: each request writes
			if ackedBy[k] >= len(ok[k]) {
				miss("%s acknowledged at %s, but %d entries %s %s %s ok for %d such writes acknowledged",
					model.DescribeOperation(in, out), rec.at(op.Return).Format("15:04:05.000"), len(ok[k]), in.by, route, k.target, ackedBy[k]+1)
			}
		}
		ackedBy[k]++
	}

	// Entries of success on what the workload made or wrote: made by a
	// request that may have done it.
	known := map[string]bool{}
	for _, id := range idOfKey {
		known[id] = true
	}
	for _, k := range slices.SortedFunc(maps.Keys(ok), func(a, b prt) int {
		return strings.Compare(a.principal+a.route+a.target, b.principal+b.route+b.target)
	}) {
		onWorkload := known[k.target] && (k.route == api.KillApp.Mux() || k.route == api.SetExecutorLimit.Mux() || k.route == api.KillDriver.Mux())
		onShared := k.route == api.PutQueue.Mux() || k.route == api.DeleteQueue.Mux() || k.route == api.CreateTenant.Mux() || k.route == api.DeleteTenant.Mux()
		onKnownSubmission := known[k.target] && (k.route == api.RegisterApp.Mux() || k.route == api.SubmitDriver.Mux())
		if (onWorkload || onShared || onKnownSubmission) && !mayHave[k] {
			miss("%d entries record as done what no request of %s that may have done it asked: %s", len(ok[k]), k.principal, describeEntries(seq, ok[k]))
		}
	}
	// An app changes no more once its kill is recorded; it is killed once.
	for id := range known {
		kills := okAny[rt{api.KillApp.Mux(), id}]
		if len(kills) > 1 {
			miss("app %s killed %d times: %s", id, len(kills), describeEntries(seq, kills))
		}
		if len(kills) == 0 {
			continue
		}
		for _, i := range okAny[rt{api.SetExecutorLimit.Mux(), id}] {
			if i > kills[0] {
				miss("app %s: its limit recorded as set after its kill: %s after %s", id, describeEntry(seq[i]), describeEntry(seq[kills[0]]))
			}
		}
	}

	// Refusals made under one steady leader are audited: each is matched
	// with an entry of its own, written while it was served or just after
	// (a refusal's entry is written as it is answered), the closest pairs
	// first.
	type refusal struct {
		in        input
		out       output
		k         string
		call, ret time.Time
	}
	var rs []refusal
	for _, op := range history {
		in, out := op.Input.(input), op.Output.(output)
		route, writes := routeOf[in.kind]
		if !writes || out.unknown || out.status == 0 {
			continue
		}
		call, ret := rec.at(op.Call), rec.at(op.Return)
		if !lw.steady(call.Add(-time.Second), ret.Add(3*time.Second)) {
			fig.refusalsElse++
			continue
		}
		rs = append(rs, refusal{in, out, fmt.Sprintf("%s|%s|%s|%d", in.by, route, targetOf(in, out), out.status), call, ret})
	}
	fig.refusals = len(rs)
	type pair struct {
		r, e int
		gap  time.Duration
	}
	var pairs []pair
	for ri, r := range rs {
		for ei, t := range refused[r.k] {
			var gap time.Duration
			switch {
			case t.Before(r.call.Add(-50*time.Millisecond)) || t.After(r.ret.Add(time.Second)):
				continue
			case t.Before(r.call):
				gap = r.call.Sub(t)
			case t.After(r.ret):
				gap = t.Sub(r.ret)
			}
			pairs = append(pairs, pair{ri, ei, gap})
		}
	}
	slices.SortStableFunc(pairs, func(a, b pair) int { return cmp.Compare(a.gap, b.gap) })
	matched := make([]bool, len(rs))
	used := map[string]map[int]bool{}
	for _, p := range pairs {
		k := rs[p.r].k
		if matched[p.r] || used[k][p.e] {
			continue
		}
		if used[k] == nil {
			used[k] = map[int]bool{}
		}
		matched[p.r], used[k][p.e] = true, true
		fig.refusalsSeen++
	}
	// A principal's refusals past its ration (not an operator's) are
	// counted, not recorded: the log's counts of them stand in for their
	// entries.
	rationed := map[string]int{}
	for _, e := range seq {
		rationed[e.Principal] += e.Suppressed
	}
	// Those not audited: any that reached the leader first, then those a
	// follower refused alone.
	var atLeader, atFollower []string
	for ri, r := range rs {
		if matched[ri] {
			continue
		}
		if rationed[r.in.by] > 0 {
			rationed[r.in.by]--
			fig.refusalsSeen++
			continue
		}
		leader := lw.leaderAt(r.call)
		line := fmt.Sprintf("%s refused at %s under a steady leader (%s then): no entry %s from then to 1 s after",
			model.DescribeOperation(r.in, r.out), r.ret.Format("15:04:05.000"), leader, strings.ReplaceAll(r.k, "|", " "))
		if r.in.via != "" && r.in.via != leader {
			atFollower = append(atFollower, line)
		} else {
			atLeader = append(atLeader, line)
		}
	}
	unaudited := append(atLeader, atFollower...)
	for _, u := range unaudited[:min(len(unaudited), 6)] {
		miss("%s", u)
	}
	if len(unaudited) > 6 {
		miss("%d refusals made under a steady leader not audited in all: %d sent to a follower alone (refused there, at the edge), %d others",
			len(unaudited), len(atFollower), len(atLeader))
	}
	return fig, problems
}

// dump writes the audit log as lined up, one JSON entry a line.
func (aw *auditWatch) dump(path string) {
	aw.mu.Lock()
	defer aw.mu.Unlock()
	f, err := os.Create(path)
	if err != nil {
		return
	}
	defer f.Close()
	enc := json.NewEncoder(f)
	for _, e := range aw.seq {
		enc.Encode(e)
	}
}

func describeEntries(seq []wire.AuditEntry, at []int) string {
	var s []string
	for _, i := range at[:min(len(at), 4)] {
		s = append(s, describeEntry(seq[i]))
	}
	return strings.Join(s, "; ")
}
