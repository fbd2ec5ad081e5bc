package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/berth-cluster/berth/client"
	"github.com/berth-cluster/berth/wire"
)

// recorder keeps the history of every op the workload made.
type recorder struct {
	start time.Time
	mu    sync.Mutex
	ops   []porcupine.Operation
}

func (r *recorder) now() int64 { return int64(time.Since(r.start)) }

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
	ended bool // known to have ended (or its kill accepted)
}

// workload runs clients that register, kill, read and limit apps and
// submit, kill and read drivers, all under idempotency keys, through
// every master, for as long as its context lives (and at most maxOps).
type workload struct {
	rec     *recorder
	clients []*client.Client
	marker  string // drivers' commands carry it

	seq     atomic.Int64
	mu      sync.Mutex
	apps    []*tracked
	drivers []*tracked
	doubt   int // submissions whose outcome stayed unknown: never touched again

	counts sync.Map // opKind → *atomic.Int64
}

// Workload apps can never start an executor: their executors are larger
// than any worker. Their only way to end is a kill.
func appDesc(key string) wire.AppDescription {
	return wire.AppDescription{Name: key, Command: []string{"sleep", "1"}, MaxCores: 256, CoresPerExecutor: 256, MemoryPerExecutorMB: 64}
}

func (w *workload) driverDesc() wire.DriverDescription {
	return wire.DriverDescription{Command: []string{"sleep", "900", w.marker}, Cores: 1, MemoryMB: 32}
}

const (
	maxActiveApps    = 30
	maxActiveDrivers = 4
	opTimeout        = 20 * time.Second
)

// run makes ops from client i until ctx ends or maxOps are done.
func (w *workload) run(ctx context.Context, i, maxOps int) {
	rng := rand.New(rand.NewPCG(uint64(i), uint64(time.Now().UnixNano())))
	for n := 0; n < maxOps && ctx.Err() == nil; n++ {
		w.one(ctx, i, rng)
		select {
		case <-ctx.Done():
		case <-time.After(time.Duration(5+rng.IntN(20)) * time.Millisecond):
		}
	}
}

func (w *workload) count(k opKind) {
	v, _ := w.counts.LoadOrStore(k, new(atomic.Int64))
	v.(*atomic.Int64).Add(1)
}

// one makes one op of a kind drawn at random.
func (w *workload) one(ctx context.Context, i int, rng *rand.Rand) {
	c := w.clients[i]
	activeApps, activeDrivers := w.active()
	switch p := rng.IntN(100); {
	case p < 20 && activeApps < maxActiveApps:
		w.register(ctx, i, c, fmt.Sprintf("app-%d", w.seq.Add(1)))
	case p < 24:
		if t := w.pick(rng, &w.apps); t != nil {
			w.register(ctx, i, c, t.key) // a repeat: must get the same id
		}
	case p < 40 || activeApps >= maxActiveApps:
		if t := w.pickActive(rng, &w.apps); t != nil {
			w.kill(ctx, i, c, t)
		}
	case p < 70:
		if t := w.pick(rng, &w.apps); t != nil {
			w.read(ctx, i, c, t)
		}
	case p < 80:
		if t := w.pickActive(rng, &w.apps); t != nil {
			w.limit(ctx, i, c, t, rng.IntN(6))
		}
	case p < 84 && activeDrivers < maxActiveDrivers:
		w.submitDriver(ctx, i, c, fmt.Sprintf("driver-%d", w.seq.Add(1)))
	case p < 89:
		if t := w.pickActive(rng, &w.drivers); t != nil {
			w.killDriver(ctx, i, c, t)
		}
	default:
		if t := w.pick(rng, &w.drivers); t != nil {
			w.readDriver(ctx, i, c, t)
		}
	}
}

func (w *workload) active() (apps, drivers int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, t := range w.apps {
		if !t.ended {
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

// pick returns one of *list at random (nil if empty); list is read under
// the workload's lock.
func (w *workload) pick(rng *rand.Rand, list *[]*tracked) *tracked {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(*list) == 0 {
		return nil
	}
	return (*list)[rng.IntN(len(*list))]
}

// pickActive returns one of *list not known to have ended.
func (w *workload) pickActive(rng *rand.Rand, list *[]*tracked) *tracked {
	w.mu.Lock()
	defer w.mu.Unlock()
	var act []*tracked
	for _, t := range *list {
		if !t.ended {
			act = append(act, t)
		}
	}
	if len(act) == 0 {
		return nil
	}
	return act[rng.IntN(len(act))]
}

// outcome turns a failed call into what the history records: a definite
// refusal (404, 409, 422) or an unknown outcome.
func outcome(err error) output {
	switch s := client.StatusCode(err); s {
	case 404, 409, 422:
		return output{status: s}
	}
	return output{unknown: true}
}

// register submits an app under key, repeating it (as a client must) while
// the outcome is unknown. It learns the id once one attempt is answered.
func (w *workload) register(ctx context.Context, i int, c *client.Client, key string) {
	for attempt := 0; attempt < 3; attempt++ {
		call := w.rec.now()
		octx, cancel := context.WithTimeout(ctx, opTimeout)
		id, err := c.RegisterApp(octx, appDesc(key), client.WithIdempotencyKey(key))
		cancel()
		out := output{id: id}
		if err != nil {
			out = outcome(err)
		}
		w.rec.add(i, input{kind: opRegister, key: key}, call, out)
		w.count(opRegister)
		if !out.unknown {
			if out.status == 0 {
				w.learn(&w.apps, key, id)
			}
			return
		}
		if ctx.Err() != nil {
			break
		}
	}
	w.inDoubt(key)
}

func (w *workload) submitDriver(ctx context.Context, i int, c *client.Client, key string) {
	for attempt := 0; attempt < 3; attempt++ {
		call := w.rec.now()
		octx, cancel := context.WithTimeout(ctx, opTimeout)
		id, err := c.SubmitDriver(octx, w.driverDesc(), client.WithIdempotencyKey(key))
		cancel()
		out := output{id: id}
		if err != nil {
			out = outcome(err)
		}
		w.rec.add(i, input{kind: opSubmitDriver, key: key}, call, out)
		w.count(opSubmitDriver)
		if !out.unknown {
			if out.status == 0 {
				w.learn(&w.drivers, key, id)
			}
			return
		}
		if ctx.Err() != nil {
			break
		}
	}
	w.inDoubt(key)
}

// learn records the id of a key (once: a repeat must get the same id, which
// the history checks).
func (w *workload) learn(list *[]*tracked, key, id string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, t := range *list {
		if t.key == key {
			return
		}
	}
	*list = append(*list, &tracked{key: key, id: id})
}

func (w *workload) inDoubt(key string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.doubt++
}

func (w *workload) ended(t *tracked) {
	w.mu.Lock()
	defer w.mu.Unlock()
	t.ended = true
}

func (w *workload) kill(ctx context.Context, i int, c *client.Client, t *tracked) {
	call := w.rec.now()
	octx, cancel := context.WithTimeout(ctx, opTimeout)
	st, err := c.KillApp(octx, t.id)
	cancel()
	out := output{state: string(st.State), ended: st.State.Finished()}
	if err != nil {
		out = outcome(err)
	}
	w.rec.add(i, input{kind: opKill, key: t.key, id: t.id}, call, out)
	w.count(opKill)
	if err == nil || out.unknown {
		w.ended(t) // killed, or may be: not picked for more kills
	}
}

func (w *workload) read(ctx context.Context, i int, c *client.Client, t *tracked) {
	call := w.rec.now()
	octx, cancel := context.WithTimeout(ctx, opTimeout)
	st, err := c.App(octx, t.id)
	cancel()
	w.count(opRead)
	if err != nil {
		if client.StatusCode(err) == 404 {
			w.rec.add(i, input{kind: opRead, key: t.key, id: t.id}, call, output{status: 404})
		}
		return // a failed read has no effect and says nothing
	}
	limit := -1
	if st.ExecutorLimit != nil {
		limit = *st.ExecutorLimit
	}
	w.rec.add(i, input{kind: opRead, key: t.key, id: t.id}, call, output{state: string(st.State), ended: st.State.Finished(), limit: limit})
}

func (w *workload) limit(ctx context.Context, i int, c *client.Client, t *tracked, n int) {
	call := w.rec.now()
	octx, cancel := context.WithTimeout(ctx, opTimeout)
	err := c.SetExecutorLimit(octx, t.id, n)
	cancel()
	out := output{}
	if err != nil {
		out = outcome(err)
	}
	w.rec.add(i, input{kind: opLimit, key: t.key, id: t.id, n: n}, call, out)
	w.count(opLimit)
}

func (w *workload) killDriver(ctx context.Context, i int, c *client.Client, t *tracked) {
	call := w.rec.now()
	octx, cancel := context.WithTimeout(ctx, opTimeout)
	st, err := c.KillDriver(octx, t.id)
	cancel()
	out := output{state: string(st.State), ended: st.State.Finished(), killReq: st.KillRequested}
	if err != nil {
		out = outcome(err)
	}
	w.rec.add(i, input{kind: opKillDriver, key: t.key, id: t.id}, call, out)
	w.count(opKillDriver)
	if err == nil || out.unknown {
		w.ended(t)
	}
}

func (w *workload) readDriver(ctx context.Context, i int, c *client.Client, t *tracked) {
	call := w.rec.now()
	octx, cancel := context.WithTimeout(ctx, opTimeout)
	st, err := c.Driver(octx, t.id)
	cancel()
	w.count(opReadDriver)
	if err != nil {
		if client.StatusCode(err) == 404 {
			w.rec.add(i, input{kind: opReadDriver, key: t.key, id: t.id}, call, output{status: 404})
		}
		return
	}
	w.rec.add(i, input{kind: opReadDriver, key: t.key, id: t.id}, call, output{state: string(st.State), ended: st.State.Finished(), killReq: st.KillRequested})
}

// keepLeases heartbeats every workload app that may be active, as a client
// without an event stream does, so that no app ends by its lease: the
// apps' clients are "alive" for the whole run.
func (w *workload) keepLeases(ctx context.Context, c *client.Client) {
	t := time.NewTicker(500 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		w.mu.Lock()
		var ids []string
		for _, a := range w.apps {
			ids = append(ids, a.id) // killed ones too: a kill of unknown outcome may not have committed
		}
		w.mu.Unlock()
		for _, id := range ids {
			hctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			_ = c.HeartbeatApp(hctx, id) // an ended app answers 409: fine
			cancel()
			if ctx.Err() != nil {
				return
			}
		}
	}
}

// finalReads reads every app and driver the workload knows, after the
// faults: the history then shows whether every acknowledged write is
// still there.
func (w *workload) finalReads(ctx context.Context) {
	w.mu.Lock()
	apps, drivers := append([]*tracked(nil), w.apps...), append([]*tracked(nil), w.drivers...)
	w.mu.Unlock()
	for _, t := range apps {
		w.read(ctx, 0, w.clients[0], t)
	}
	for _, t := range drivers {
		w.readDriver(ctx, 0, w.clients[0], t)
	}
}
