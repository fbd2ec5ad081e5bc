package chaos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/berth-cluster/berth/client"
	"github.com/berth-cluster/berth/internal/poll"
	"github.com/berth-cluster/berth/wire"
)

// recorder keeps the history of every op the workload made.
type recorder struct {
	start time.Time
	mu    sync.Mutex
	ops   []porcupine.Operation
}

func (r *recorder) now() int64 { return int64(time.Since(r.start)) }

// at is the wall time of a history time.
func (r *recorder) at(t int64) time.Time { return r.start.Add(time.Duration(t)) }

// add records an op: called at call, answered now (or, if its outcome is
// unknown, possibly never).
func (r *recorder) add(clientID int, in input, call int64, out output) {
	ret := r.now()
	if out.unknown {
		ret = pending
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ops = append(r.ops, porcupine.Operation{ClientId: clientID, Input: in, Call: call, Output: out, Return: ret})
}

func (r *recorder) history() []porcupine.Operation {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]porcupine.Operation(nil), r.ops...)
}

// tracked is an app or driver the workload made and knows the id of.
type tracked struct {
	key   string
	id    string
	owner string // who submitted it, as the audit log names it
	ended bool   // known to have ended (or its kill accepted)
	// killAt is when the first kill of it was sent (zero: none was).
	killAt time.Time
	// leaseDone: its end is known (a kill answered, or a heartbeat
	// refused as ended): its lease needs keeping no more.
	leaseDone bool
	burst     *burst              // a tenant's app whose executors run
	desc      wire.AppDescription // an app's, as registered (a repeat sends it again)
}

// burst is a tenant's app with real executors, in one of its queues: it
// asks for more than the cluster has free, so that the master preempts
// for it, and is killed by its tenant once due.
type burst struct {
	marker string // its executors' command ends with it
	queue  string
	due    time.Time
}

// actor makes ops: the operator (the secret) or a tenant (its token), with
// one client per workload goroutine, each entering through another master.
type actor struct {
	tenant  string // "" for the operator
	by      string // as the audit log names it
	queues  []string
	bursts  int // most bursts it has running at once (its queues' share of the preemptions)
	clients []*client.Client
	pinned  []*client.Client // a tenant's: one per master, asking it alone
}

// workload runs clients that register, kill, read and limit apps and
// submit, kill and read drivers, all under idempotency keys, through
// every master, for as long as its context lives (and at most maxOps); as
// the operator and as tenants (their own apps, in their queues, with
// priorities, and requests they may not make), and the operator's writes
// of queues and tenants.
type workload struct {
	rec      *recorder
	operator *actor
	tenants  []*actor
	marker   string // drivers' commands carry it
	// burstMarker starts the markers of the tenants' bursts; watch learns
	// each one before it is registered.
	burstMarker string
	watch       *pidWatch
	masters     []string // the masters' ids, as actor.pinned asks them

	seq     atomic.Int64
	mu      sync.Mutex
	apps    []*tracked
	drivers []*tracked
	doubt   int // submissions whose outcome stayed unknown: never touched again

	counts sync.Map // opKind → *atomic.Int64
	probes atomic.Int64
}

// Workload apps can never start an executor: their executors are larger
// than any worker. Their only way to end is a kill.
func appDesc(key string) wire.AppDescription {
	return wire.AppDescription{Name: key, Command: []string{"sleep", "1"}, MaxCores: 256, CoresPerExecutor: 256, MemoryPerExecutorMB: 64}
}

func (w *workload) driverDesc() wire.DriverDescription {
	return wire.DriverDescription{Command: []string{"sleep", "900", w.marker}, Cores: 1, MemoryMB: 32}
}

// burstDesc is a burst's app: up to burstCores executors of one core,
// each a `sleep` numbered by its executor id and ending with the marker.
func burstDesc(key string, b *burst, priority int) wire.AppDescription {
	return wire.AppDescription{
		Name:                key,
		Command:             []string{"sleep", "600", "{{EXECUTOR_ID}}", b.marker},
		MaxCores:            burstCores,
		CoresPerExecutor:    1,
		MemoryPerExecutorMB: 64,
		ProcessSpec:         wire.ProcessSpec{Queue: b.queue, Priority: priority},
	}
}

const (
	maxActiveApps       = 30
	maxActiveTenantApps = 12 // each tenant's
	maxActiveDrivers    = 4
	burstCores          = 3
	opTimeout           = 20 * time.Second
)

// run makes ops from client i until ctx ends or maxOps are done.
func (w *workload) run(ctx context.Context, i, maxOps int) {
	rng := rand.New(rand.NewPCG(uint64(i), uint64(time.Now().UnixNano())))
	for n := 0; n < maxOps && ctx.Err() == nil; n++ {
		w.one(ctx, i, rng)
		poll.Sleep(ctx, time.Duration(5+rng.IntN(20))*time.Millisecond)
	}
}

func (w *workload) count(k opKind) {
	v, _ := w.counts.LoadOrStore(k, new(atomic.Int64))
	v.(*atomic.Int64).Add(1)
}

// one makes one op: a burst's due kill first, else one drawn at random.
func (w *workload) one(ctx context.Context, i int, rng *rand.Rand) {
	if a, t := w.dueBurst(); t != nil {
		w.kill(ctx, i, a, t, false)
		return
	}
	switch p := rng.IntN(100); {
	case p < 62:
		w.operatorOne(ctx, i, rng)
	case p < 90:
		w.tenantOne(ctx, i, rng, w.tenants[rng.IntN(len(w.tenants))])
	default:
		w.sharedOne(ctx, i, rng)
	}
}

// operatorOne is one of the operator's ops on apps and drivers.
func (w *workload) operatorOne(ctx context.Context, i int, rng *rand.Rand) {
	op := w.operator
	activeApps, activeDrivers := w.active(op.by)
	switch p := rng.IntN(100); {
	case p < 20 && activeApps < maxActiveApps:
		key := fmt.Sprintf("app-%d", w.seq.Add(1))
		w.register(ctx, i, op, key, appDesc(key), nil)
	case p < 24:
		if t := w.pick(rng, &w.apps, ownedBy(op.by)); t != nil {
			w.register(ctx, i, op, t.key, appDesc(t.key), nil) // a repeat: must get the same id
		}
	case p < 40 || activeApps >= maxActiveApps:
		if t := w.pick(rng, &w.apps, killable(op.by)); t != nil {
			w.kill(ctx, i, op, t, false)
		}
	case p < 70:
		if t := w.pick(rng, &w.apps, ownedBy(op.by)); t != nil {
			w.readApp(ctx, i, op, t)
		}
	case p < 80:
		if t := w.pick(rng, &w.apps, killable(op.by)); t != nil {
			w.limit(ctx, i, op, t, rng.IntN(6))
		}
	case p < 84 && activeDrivers < maxActiveDrivers:
		w.submitDriver(ctx, i, op.clients[i], fmt.Sprintf("driver-%d", w.seq.Add(1)))
	case p < 89:
		if t := w.pick(rng, &w.drivers, func(t *tracked) bool { return !t.ended }); t != nil {
			w.killDriver(ctx, i, op.clients[i], t)
		}
	default:
		if t := w.pick(rng, &w.drivers, nil); t != nil {
			w.readDriver(ctx, i, op.clients[i], t)
		}
	}
}

// tenantOne is one of tenant a's ops: on its own apps, in its queues, with
// priorities; a burst; a kill of another tenant's app (403).
func (w *workload) tenantOne(ctx context.Context, i int, rng *rand.Rand, a *actor) {
	active, _ := w.active(a.by)
	switch p := rng.IntN(100); {
	case p < 16 && active < maxActiveTenantApps:
		key := fmt.Sprintf("%s-app-%d", a.tenant, w.seq.Add(1))
		desc := appDesc(key)
		desc.Queue, desc.Priority = a.queues[rng.IntN(len(a.queues))], rng.IntN(7)-3
		w.register(ctx, i, a, key, desc, nil)
	case p < 19:
		if t := w.pick(rng, &w.apps, func(t *tracked) bool { return t.owner == a.by && t.burst == nil }); t != nil {
			w.register(ctx, i, a, t.key, w.descOf(t), nil) // a repeat
		}
	case p < 33:
		if t := w.pick(rng, &w.apps, killable(a.by)); t != nil {
			w.kill(ctx, i, a, t, false)
		}
	case p < 63:
		if t := w.pick(rng, &w.apps, ownedBy(a.by)); t != nil {
			w.readApp(ctx, i, a, t)
		}
	case p < 75:
		if t := w.pick(rng, &w.apps, killable(a.by)); t != nil {
			w.limit(ctx, i, a, t, rng.IntN(6))
		}
	case p < 87:
		if w.activeBursts(a.by) < a.bursts {
			w.startBurst(ctx, i, rng, a)
		}
	case p < 93:
		// Another tenant's app (active or not): forbidden.
		if t := w.pick(rng, &w.apps, func(t *tracked) bool { return t.owner != a.by && t.owner != operator }); t != nil {
			w.probes.Add(1)
			w.kill(ctx, i, a, t, true)
		}
	default:
		w.readQueues(ctx, i, a)
	}
}

// descOf is the description t was registered with (workload apps only).
func (w *workload) descOf(t *tracked) wire.AppDescription {
	w.mu.Lock()
	defer w.mu.Unlock()
	return t.desc
}

// startBurst registers a burst of tenant a in one of its queues: its
// executors are watched from before it is registered.
func (w *workload) startBurst(ctx context.Context, i int, rng *rand.Rand, a *actor) {
	n := w.seq.Add(1)
	key := fmt.Sprintf("%s-burst-%d", a.tenant, n)
	b := &burst{marker: fmt.Sprintf("%s%d", w.burstMarker, n), queue: a.queues[0],
		due: time.Now().Add(time.Duration(5000+rng.IntN(4000)) * time.Millisecond)}
	w.watch.add(b.marker, key, false, burstCores)
	w.register(ctx, i, a, key, burstDesc(key, b, 5*rng.IntN(2)), b)
}

// dueBurst returns a burst due for its kill (and its tenant), if any.
func (w *workload) dueBurst() (*actor, *tracked) {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := time.Now()
	for _, t := range w.apps {
		if t.burst != nil && !t.ended && t.killAt.IsZero() && now.After(t.burst.due) {
			t.killAt = now // taken: one goroutine kills it
			for _, a := range w.tenants {
				if a.by == t.owner {
					return a, t
				}
			}
		}
	}
	return nil, nil
}

// killBursts kills, after the run, the bursts whose kill was not
// answered (none sent, or one of unknown outcome), so that the cluster
// settles before the final checks.
func (w *workload) killBursts(ctx context.Context) {
	w.mu.Lock()
	var ts []*tracked
	for _, t := range w.apps {
		if t.burst != nil && !t.leaseDone {
			ts = append(ts, t)
		}
	}
	w.mu.Unlock()
	for _, t := range ts {
		for _, a := range w.tenants {
			if a.by == t.owner && ctx.Err() == nil {
				w.kill(ctx, 0, a, t, false)
			}
		}
	}
}

// burstKilled reports whether the burst of marker was killed (its kill
// answered).
func (w *workload) burstKilled(marker string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, t := range w.apps {
		if t.burst != nil && t.burst.marker == marker {
			return t.leaseDone
		}
	}
	return false
}

// killedAt is when the app of marker was first asked to end (zero: never);
// false if it is none the workload knows (a burst whose registration's
// outcome is unknown).
func (w *workload) killedAt(marker string) (time.Time, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, t := range w.apps {
		if t.burst != nil && t.burst.marker == marker {
			return t.killAt, true
		}
	}
	return time.Time{}, !strings.HasPrefix(marker, w.burstMarker)
}

// ownedBy picks the apps of principal by.
func ownedBy(by string) func(*tracked) bool {
	return func(t *tracked) bool { return t.owner == by }
}

// killable picks the apps of by that may be active, bursts but for their
// due kill excepted.
func killable(by string) func(*tracked) bool {
	return func(t *tracked) bool { return t.owner == by && !t.ended && t.burst == nil }
}

// active counts the apps of by and the drivers that may be active.
func (w *workload) active(by string) (apps, drivers int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, t := range w.apps {
		if !t.ended && t.owner == by {
			apps++
		}
	}
	for _, t := range w.drivers {
		if !t.ended {
			drivers++
		}
	}
	return apps, drivers
}

func (w *workload) activeBursts(by string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, t := range w.apps {
		if t.burst != nil && t.owner == by && !t.ended {
			n++
		}
	}
	return n
}

// pick returns one of *list that keep accepts (nil keep: any) at random,
// nil if none; list is read under the workload's lock.
func (w *workload) pick(rng *rand.Rand, list *[]*tracked, keep func(*tracked) bool) *tracked {
	w.mu.Lock()
	defer w.mu.Unlock()
	var in []*tracked
	for _, t := range *list {
		if keep == nil || keep(t) {
			in = append(in, t)
		}
	}
	if len(in) == 0 {
		return nil
	}
	return in[rng.IntN(len(in))]
}

// outcome turns a failed call into what the history records: a definite
// refusal (403, 404, 409, 422) or an unknown outcome.
func outcome(err error) output {
	if errors.Is(err, client.ErrGoneAfterRetry) {
		return output{unknown: true} // deleted by this op or by another: the history cannot say which
	}
	switch s := client.StatusCode(err); s {
	case 403, 404, 409, 422:
		return output{status: s}
	}
	return output{unknown: true}
}

// timed makes one call of the workload within opTimeout, and returns when
// it was made (for the history) with its error.
func (w *workload) timed(ctx context.Context, do func(context.Context) error) (call int64, err error) {
	call = w.rec.now()
	octx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	return call, do(octx)
}

// write makes a call that may change something (do says what it was
// answered) and records it: a failed call as its outcome (see outcome).
func (w *workload) write(ctx context.Context, i int, in input, do func(context.Context) (output, error)) (output, error) {
	var out output
	call, err := w.timed(ctx, func(ctx context.Context) (err error) {
		out, err = do(ctx)
		return err
	})
	if err != nil {
		out = outcome(err)
	}
	w.rec.add(i, in, call, out)
	w.count(in.kind)
	return out, err
}

// read makes a call that changes nothing (do says what it was answered)
// and records it, unless it failed: a failed read has no effect and says
// nothing, but for a 404, which says the app or driver is unknown.
func (w *workload) read(ctx context.Context, i int, in input, do func(context.Context) (output, error)) {
	var out output
	call, err := w.timed(ctx, func(ctx context.Context) (err error) {
		out, err = do(ctx)
		return err
	})
	w.count(in.kind)
	if err != nil {
		if client.StatusCode(err) != 404 {
			return
		}
		out = output{status: 404}
	}
	w.rec.add(i, in, call, out)
}

// submit registers an app or submits a driver under key (kind says which,
// do makes the call), repeating it (as a client must) while the outcome is
// unknown. It learns the id into *list once one attempt is answered.
func (w *workload) submit(ctx context.Context, i int, in input, list *[]*tracked, learn func(id string), do func(context.Context) (string, error)) {
	for attempt := 0; attempt < 3; attempt++ {
		out, _ := w.write(ctx, i, in, func(ctx context.Context) (output, error) {
			id, err := do(ctx)
			return output{id: id}, err
		})
		if !out.unknown {
			if out.status == 0 {
				learn(out.id)
			}
			return
		}
		if ctx.Err() != nil {
			break
		}
	}
	w.inDoubt(in.key)
}

// register registers app key as a (a repeat if it was registered before):
// a workload app, or burst b's.
func (w *workload) register(ctx context.Context, i int, a *actor, key string, desc wire.AppDescription, b *burst) {
	c := a.clients[i]
	w.submit(ctx, i, input{kind: opRegister, key: key, by: a.by}, &w.apps, func(id string) {
		w.learn(&w.apps, &tracked{key: key, id: id, owner: a.by, burst: b, desc: desc})
	}, func(ctx context.Context) (string, error) {
		return c.RegisterApp(ctx, desc, client.WithIdempotencyKey(key))
	})
}

func (w *workload) submitDriver(ctx context.Context, i int, c *client.Client, key string) {
	w.submit(ctx, i, input{kind: opSubmitDriver, key: key, by: operator}, &w.drivers, func(id string) {
		w.learn(&w.drivers, &tracked{key: key, id: id, owner: operator})
	}, func(ctx context.Context) (string, error) {
		return c.SubmitDriver(ctx, w.driverDesc(), client.WithIdempotencyKey(key))
	})
}

// learn records the id of a key (once: a repeat must get the same id, which
// the history checks).
func (w *workload) learn(list *[]*tracked, t *tracked) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if slices.ContainsFunc(*list, func(o *tracked) bool { return o.key == t.key }) {
		return
	}
	*list = append(*list, t)
	if t.burst != nil {
		w.watch.learn(t.burst.marker, t.id)
	}
}

func (w *workload) inDoubt(key string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.doubt++
}

// end asks to end t (kind says how, do makes the call); once that is
// accepted, or may have been, t is not picked for more kills. A probe (a
// request its principal may not make) changes nothing of t.
func (w *workload) end(ctx context.Context, i int, in input, t *tracked, do func(context.Context) (output, error)) {
	if !in.probe {
		w.mu.Lock()
		if t.killAt.IsZero() {
			t.killAt = time.Now()
		}
		w.mu.Unlock()
	}
	out, err := w.write(ctx, i, in, do)
	if in.probe {
		return
	}
	if err == nil || out.unknown {
		w.mu.Lock()
		defer w.mu.Unlock()
		t.ended = true
		t.leaseDone = t.leaseDone || err == nil
	}
}

func (w *workload) kill(ctx context.Context, i int, a *actor, t *tracked, probe bool) {
	c := a.clients[i]
	w.end(ctx, i, input{kind: opKill, key: t.key, id: t.id, by: a.by, probe: probe}, t, func(ctx context.Context) (output, error) {
		st, err := c.KillApp(ctx, t.id)
		return output{state: string(st.State), ended: st.State.Finished()}, err
	})
}

func (w *workload) killDriver(ctx context.Context, i int, c *client.Client, t *tracked) {
	w.end(ctx, i, input{kind: opKillDriver, key: t.key, id: t.id, by: operator}, t, func(ctx context.Context) (output, error) {
		st, err := c.KillDriver(ctx, t.id)
		return driverOutput(st), err
	})
}

func (w *workload) limit(ctx context.Context, i int, a *actor, t *tracked, n int) {
	c := a.clients[i]
	w.write(ctx, i, input{kind: opLimit, key: t.key, id: t.id, n: n, by: a.by}, func(ctx context.Context) (output, error) {
		return output{}, c.SetExecutorLimit(ctx, t.id, n)
	})
}

func (w *workload) readApp(ctx context.Context, i int, a *actor, t *tracked) {
	c := a.clients[i]
	w.read(ctx, i, input{kind: opRead, key: t.key, id: t.id, by: a.by}, func(ctx context.Context) (output, error) {
		st, err := c.App(ctx, t.id)
		limit := -1
		if st.ExecutorLimit != nil {
			limit = *st.ExecutorLimit
		}
		return output{state: string(st.State), ended: st.State.Finished(), limit: limit}, err
	})
}

func (w *workload) readDriver(ctx context.Context, i int, c *client.Client, t *tracked) {
	w.read(ctx, i, input{kind: opReadDriver, key: t.key, id: t.id, by: operator}, func(ctx context.Context) (output, error) {
		st, err := c.Driver(ctx, t.id)
		return driverOutput(st), err
	})
}

// driverOutput is what a driver's kill or read was answered.
func driverOutput(st wire.DriverStatus) output {
	out := output{state: string(st.State), ended: st.State.Finished(), killReq: st.KillRequested}
	if st.State == wire.DriverError && strings.HasPrefix(st.Message, "worker lost") {
		out.lost, out.worker = true, st.WorkerID
	}
	return out
}

// keepLeases heartbeats every workload app that may be active, as a client
// without an event stream does, so that no app ends by its lease: the
// apps' clients are "alive" for the whole run. An app whose end is known
// (its kill answered, or a heartbeat refused as ended) is left alone: each
// refusal is an entry of the audit log.
func (w *workload) keepLeases(ctx context.Context, c *client.Client) {
	poll.Every(ctx, 500*time.Millisecond, func() {
		w.mu.Lock()
		var ts []*tracked
		for _, a := range w.apps {
			if !a.leaseDone {
				ts = append(ts, a) // killed ones too: a kill of unknown outcome may not have committed
			}
		}
		w.mu.Unlock()
		// Several at once: a long run has tens of thousands of apps to
		// keep, and one after the other a sweep outlasted the app
		// timeout (10 s), so that apps ended by their lease, which the
		// history has no operation for.
		next := make(chan *tracked)
		var wg sync.WaitGroup
		for range leaseKeepers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for t := range next {
					hctx, cancel := context.WithTimeout(ctx, 5*time.Second)
					err := c.HeartbeatApp(hctx, t.id)
					cancel()
					if client.StatusCode(err) == 409 { // ended
						w.mu.Lock()
						t.leaseDone = true
						w.mu.Unlock()
					}
				}
			}()
		}
		for _, t := range ts {
			if ctx.Err() != nil {
				break
			}
			next <- t
		}
		close(next)
		wg.Wait()
	})
}

// leaseKeepers is the heartbeats keepLeases sends at once.
const leaseKeepers = 16

// finalReads reads every app and driver the workload knows, and the
// queues and tenants, after the faults: the history then shows whether
// every acknowledged write is still there.
func (w *workload) finalReads(ctx context.Context) {
	w.mu.Lock()
	apps, drivers := append([]*tracked(nil), w.apps...), append([]*tracked(nil), w.drivers...)
	w.mu.Unlock()
	for _, t := range apps {
		a := w.operator
		for _, ta := range w.tenants {
			if ta.by == t.owner {
				a = ta
			}
		}
		w.readApp(ctx, 0, a, t)
	}
	for _, t := range drivers {
		w.readDriver(ctx, 0, w.operator.clients[0], t)
	}
	w.readQueues(ctx, 0, w.operator)
	w.readTenants(ctx, 0)
}
