package chaos

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/anishathalye/porcupine"

	"github.com/berth-cluster/berth/client"
	"github.com/berth-cluster/berth/wire"
)

// The shared cluster under faults: queues of different weights (one with a
// guarantee, one with a limit, one that may not be preempted), tenants
// submitting into theirs, and the operator changing queues and tenants
// while the faults go on.

// queueSettings are the whole settings of a queue; the workload always
// puts them all, so that a put replaces the queue's value (model_test.go).
type queueSettings struct {
	weight    float64
	guarantee wire.Amount
	limit     wire.Amount // zero: none
	preempt   bool
}

func (q queueSettings) spec() wire.QueueSpec {
	w, g, l, p := q.weight, q.guarantee, q.limit, q.preempt
	return wire.QueueSpec{Weight: &w, Guarantee: &g, Limit: &l, Preempt: &p} // a zero limit clears it
}

func (q queueSettings) String() string { return specString(q.weight, q.guarantee, &q.limit, q.preempt) }

// specString is a queue's value in the model.
func specString(weight float64, g wire.Amount, l *wire.Amount, preempt bool) string {
	limit := "none"
	if l != nil && (l.Cores != 0 || l.MemoryMB != 0 || len(l.Resources) > 0) {
		limit = amountString(*l)
	}
	return fmt.Sprintf("weight %g, guarantee %s, limit %s, preempt %v", weight, amountString(g), limit, preempt)
}

func amountString(a wire.Amount) string {
	s := fmt.Sprintf("%d cores %d MB", a.Cores, a.MemoryMB)
	for _, r := range slices.Sorted(maps.Keys(a.Resources)) {
		s += fmt.Sprintf(" %s %v", r, a.Resources[r])
	}
	return s
}

func statusSpec(s wire.QueueStatus) string {
	return specString(s.Weight, s.Guarantee, s.Limit, s.Preempt)
}

// The queues set up before the run. steady holds long-1, whose executors
// must never end: it may not be preempted. batch holds long-2 and long-3,
// which take what is free and give it back to the tenants' bursts in etl
// (weight 2, a guarantee) and adhoc (a limit).
var sharedQueues = map[string]queueSettings{
	"steady": {weight: 1, guarantee: wire.Amount{Cores: 4, MemoryMB: 512}},
	"batch":  {weight: 1, preempt: true},
	"etl":    {weight: 2, guarantee: wire.Amount{Cores: 4}, preempt: true},
	"adhoc":  {weight: 1, limit: wire.Amount{Cores: burstCores}, preempt: true},
}

// The operator creates, changes and deletes scratch during the run; it
// changes the weights of reweighted.
const scratchQueue = "scratch"

var (
	reweighted     = []string{"adhoc", "batch", "etl"}
	modelledQueues = []string{"adhoc", "batch", "etl", scratchQueue, "steady"} // default is not written
)

func scratchSettings(rng *rand.Rand) queueSettings {
	q := queueSettings{weight: float64(1 + rng.IntN(3)), guarantee: wire.Amount{Cores: 1}, preempt: rng.IntN(2) == 0}
	if rng.IntN(2) == 0 {
		q.limit = wire.Amount{Cores: 2}
	}
	return q
}

// The tenants set up before the run: each bursts into the first of its
// queues. The operator creates and deletes scratchTenant during the run.
var sharedTenants = []struct {
	name   string
	queues []string
	bursts int
}{
	{"alpha", []string{"etl", "adhoc"}, 2},
	{"beta", []string{"adhoc"}, 1},
}

const scratchTenant = "scratch"

var modelledTenants = []string{"alpha", "beta", scratchTenant}

// setupShared sets the queues up and creates the tenants, as the
// operator, recorded in the history (as client setupClient); it returns
// each tenant's token.
func (w *workload) setupShared(ctx context.Context) (map[string]string, error) {
	for _, name := range slices.Sorted(maps.Keys(sharedQueues)) {
		if out, err := w.putQueue(ctx, setupClient, w.operator, name, sharedQueues[name]); err != nil || out.status != 0 {
			return nil, fmt.Errorf("set queue %s: %v", name, err)
		}
	}
	tokens := map[string]string{}
	for _, t := range sharedTenants {
		tok, err := w.createTenant(ctx, setupClient, t.name, t.queues)
		if err != nil {
			return nil, err
		}
		tokens[t.name] = tok
	}
	return tokens, nil
}

// sharedOne is one op on queues and tenants: the operator's writes and
// reads, and a tenant's attempt to change a queue (403).
func (w *workload) sharedOne(ctx context.Context, i int, rng *rand.Rand) {
	op := w.operator
	switch p := rng.IntN(100); {
	case p < 25:
		name := reweighted[rng.IntN(len(reweighted))]
		q := sharedQueues[name]
		q.weight = float64(1 + rng.IntN(3))
		w.putQueue(ctx, i, op, name, q)
	case p < 38:
		w.putQueue(ctx, i, op, scratchQueue, scratchSettings(rng))
	case p < 46:
		w.deleteQueue(ctx, i, scratchQueue)
	case p < 52:
		w.createTenant(ctx, i, scratchTenant, []string{"adhoc"})
	case p < 58:
		w.deleteTenant(ctx, i, scratchTenant)
	case p < 66:
		w.readTenants(ctx, i)
	case p < 72:
		// A tenant may not change a queue (403), through whichever
		// master it asks.
		a := w.tenants[rng.IntN(len(w.tenants))]
		q := sharedQueues[a.queues[0]]
		q.weight = 9
		w.probes.Add(1)
		m := rng.IntN(len(a.pinned))
		w.putQueueWith(ctx, i, a.pinned[m], a, a.queues[0], q, w.masters[m])
	default:
		w.readQueues(ctx, i, op)
	}
}

// finalProbes has each tenant try, once the faults are over, to change
// one of its queues through each master alone (403): each refusal, made
// under a steady leader, must be audited.
func (w *workload) finalProbes(ctx context.Context) {
	for _, a := range w.tenants {
		q := sharedQueues[a.queues[0]]
		q.weight = 9
		for m, c := range a.pinned {
			w.probes.Add(1)
			w.putQueueWith(ctx, 0, c, a, a.queues[0], q, w.masters[m])
		}
	}
}

// setupClient is the client id of the setup's ops in the history.
const setupClient = -1

// clientOf is a's client for history client i (the setup's: the first).
func (a *actor) clientOf(i int) int { return max(i, 0) }

func (w *workload) putQueue(ctx context.Context, i int, a *actor, name string, q queueSettings) (output, error) {
	return w.putQueueWith(ctx, i, a.clients[a.clientOf(i)], a, name, q, "")
}

// putQueueWith puts queue name's settings through c; via, when not "",
// names the one master c asks, and makes it a probe (a tenant's).
func (w *workload) putQueueWith(ctx context.Context, i int, c *client.Client, a *actor, name string, q queueSettings, via string) (output, error) {
	return w.write(ctx, i, input{kind: opPutQueue, key: "queue:" + name, id: name, spec: q.String(), by: a.by, probe: via != "", via: via},
		func(ctx context.Context) (output, error) {
			st, err := c.PutQueue(ctx, name, q.spec())
			return output{spec: statusSpec(st)}, err
		})
}

func (w *workload) deleteQueue(ctx context.Context, i int, name string) {
	c := w.operator.clients[i]
	w.write(ctx, i, input{kind: opDeleteQueue, key: "queue:" + name, id: name, by: operator}, func(ctx context.Context) (output, error) {
		return output{}, c.DeleteQueue(ctx, name)
	})
}

// createTenant creates tenant name and returns its token.
func (w *workload) createTenant(ctx context.Context, i int, name string, queues []string) (string, error) {
	c := w.operator.clients[w.operator.clientOf(i)]
	var token string
	_, err := w.write(ctx, i, input{kind: opCreateTenant, key: "tenant:" + name, id: name, spec: strings.Join(queues, ","), by: operator},
		func(ctx context.Context) (output, error) {
			tc, err := c.CreateTenant(ctx, name, wire.TenantSpec{Queues: queues})
			token = tc.Token
			return output{}, err
		})
	return token, err
}

func (w *workload) deleteTenant(ctx context.Context, i int, name string) {
	c := w.operator.clients[i]
	w.write(ctx, i, input{kind: opDeleteTenant, key: "tenant:" + name, id: name, by: operator}, func(ctx context.Context) (output, error) {
		return output{}, c.DeleteTenant(ctx, name)
	})
}

// readQueues reads GET /v1/queues as a, recorded as one read per modelled
// queue.
func (w *workload) readQueues(ctx context.Context, i int, a *actor) {
	c := a.clients[i]
	var qs wire.Queues
	call, err := w.timed(ctx, func(ctx context.Context) (err error) {
		qs, err = c.Queues(ctx)
		return err
	})
	w.count(opReadQueue)
	if err != nil {
		return
	}
	got := map[string]string{}
	for _, q := range qs.Queues {
		got[q.Name] = statusSpec(q)
	}
	for _, name := range modelledQueues {
		out := output{status: 404}
		if s, ok := got[name]; ok {
			out = output{spec: s}
		}
		w.rec.add(i, input{kind: opReadQueue, key: "queue:" + name, id: name, by: a.by}, call, out)
	}
}

// readTenants reads GET /v1/tenants, recorded as one read per modelled
// tenant.
func (w *workload) readTenants(ctx context.Context, i int) {
	c := w.operator.clients[i]
	var ts wire.Tenants
	call, err := w.timed(ctx, func(ctx context.Context) (err error) {
		ts, err = c.Tenants(ctx)
		return err
	})
	w.count(opReadTenant)
	if err != nil {
		return
	}
	got := map[string]string{}
	for _, t := range ts.Tenants {
		got[t.Name] = strings.Join(t.Queues, ",")
	}
	for _, name := range modelledTenants {
		out := output{status: 404}
		if s, ok := got[name]; ok {
			out = output{spec: s}
		}
		w.rec.add(i, input{kind: opReadTenant, key: "tenant:" + name, id: name, by: operator}, call, out)
	}
}

// registerLosses checks the queues and tenants at the end against the
// last acknowledged write of each: where no other write may have come
// after it (none acknowledged later, none of unknown outcome sent before
// it was answered), the final read must show what it wrote. It also lists
// every request a tenant was let make that it may not (a probe answered
// 200).
func registerLosses(history []porcupine.Operation) (acked int, lost, breaches []string) {
	final := map[string]output{}
	writes := map[string][]porcupine.Operation{}
	for _, op := range history {
		in, out := op.Input.(input), op.Output.(output)
		if in.probe {
			if !out.unknown && out.status == 0 {
				breaches = append(breaches, fmt.Sprintf("%s was let %s", in.by, model.DescribeOperation(in, out)))
			}
			continue
		}
		switch in.kind {
		case opReadQueue, opReadTenant:
			final[in.key] = out
		case opPutQueue, opDeleteQueue, opCreateTenant, opDeleteTenant:
			if out.unknown || out.status == 0 {
				writes[in.key] = append(writes[in.key], op)
			}
		}
	}
	for _, key := range slices.Sorted(maps.Keys(writes)) {
		var last *porcupine.Operation
		for j, op := range writes[key] {
			if out := op.Output.(output); !out.unknown {
				acked++
				if last == nil || op.Return > last.Return {
					last = &writes[key][j]
				}
			}
		}
		f, read := final[key]
		if last == nil || !read {
			continue
		}
		later := false
		for _, op := range writes[key] {
			if op.Return > last.Call && !(op.Call == last.Call && op.ClientId == last.ClientId) {
				later = true
			}
		}
		if later {
			continue // porcupine weighs these
		}
		in := last.Input.(input)
		want := output{status: 404}
		if in.kind == opPutQueue || in.kind == opCreateTenant {
			want = output{spec: in.spec}
		}
		if f.status != want.status || f.spec != want.spec {
			lost = append(lost, fmt.Sprintf("%s acknowledged as the last write of %s; at the end: %s", model.DescribeOperation(in, last.Output), key, describeRead(f)))
		}
	}
	return acked, lost, breaches
}

func describeRead(o output) string {
	if o.status == 404 {
		return "absent"
	}
	return "[" + o.spec + "]"
}
