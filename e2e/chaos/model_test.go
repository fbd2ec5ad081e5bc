package chaos

import (
	"fmt"
	"math"

	"github.com/anishathalye/porcupine"
)

// The model the history is checked against, one submission key (one app,
// or one driver), one queue and one tenant per partition, as etcd's
// robustness tests check theirs with porcupine.
//
// Workload apps never get executors (their executor size fits no worker)
// but for the tenants' bursts, whose executors run `sleep`; their leases
// are kept, so the only way one ends is a kill; workload drivers run
// `sleep` for longer than the test and are not supervised, so one ends
// only once its kill was accepted, or in ERROR when its worker is lost
// (which only a worker's outage may cause: verify checks that the worker
// named was out). Anything else a read shows is a broken promise. A request refused as forbidden (403: a tenant on another's app,
// a tenant writing a queue) changes nothing.
//
// A queue and a tenant are each a register: the workload always puts a
// queue's whole settings (weight, guarantee, limit, preempt), so a put
// replaces the value, a delete empties it, and a read of the list (GET
// /v1/queues, GET /v1/tenants) is split into one read per modelled name:
// present with its value, or absent. A tenant's value is its queues; a
// creation of an existing tenant is refused (409).

type opKind int

const (
	opRegister opKind = iota + 1
	opKill
	opRead
	opLimit
	opSubmitDriver
	opKillDriver
	opReadDriver
	opPutQueue
	opDeleteQueue
	opReadQueue
	opCreateTenant
	opDeleteTenant
	opReadTenant
	lastOp = opReadTenant
)

func (k opKind) String() string {
	return [...]string{"", "register", "kill", "read", "limit", "submitDriver", "killDriver", "readDriver",
		"putQueue", "deleteQueue", "readQueue", "createTenant", "deleteTenant", "readTenant"}[k]
}

// onRegister reports whether k is a queue's or a tenant's op.
func (k opKind) onRegister() bool { return k >= opPutQueue }

// input is what a client asked.
type input struct {
	kind opKind
	key  string // the idempotency key of the submission the op concerns; "queue:NAME", "tenant:NAME"
	id   string // the app's or driver's id, for ops on an existing one; the queue's or tenant's name
	n    int    // the executor limit asked for
	spec string // a queue's settings put, a tenant's queues (canonical: specString, tenantString)
	by   string // who asked, as the audit log names it: "secret", "tenant:NAME"
	// probe: a request its principal may not make (403 expected), which
	// can have no effect whatever its answer.
	probe bool
	via   string // the one master a probe was sent to, if it asked one alone
}

// operator is the workload's operator as the audit log names it (it
// proves itself with the secret).
const operator = "secret"

// output is what it was answered. unknown: no answer, or one that does not
// say whether the change was made (a timeout, a 504): the op may take
// effect at any time after it was sent, or never.
type output struct {
	unknown bool
	status  int    // the HTTP status of a definite refusal (404, 409); 0 if done
	id      string // register, submit
	state   string // kill, read: the state answered
	ended   bool   // that state is final
	limit   int    // read: the executor limit, -1 for none
	killReq bool   // driver kill, driver read: a kill was accepted
	spec    string // queue put, queue or tenant read: the value answered
	// lost: a driver's kill or read answered that it ended with its
	// worker (ERROR, "worker lost: ..."), on worker.
	lost   bool
	worker string
}

// entity is the model's state of one key: an app, a driver, a queue or a
// tenant.
type entity struct {
	exists  bool
	id      string // "" while it exists only by an op of unknown outcome
	final   string // "" while active
	limit   int    // -1: no executor limit
	killReq bool
	spec    string // a queue's settings, a tenant's queues
}

func (e entity) withID(id string) (entity, bool) {
	if e.id != "" && e.id != id {
		return e, false
	}
	e.id = id
	return e, true
}

// step returns the states the entity may be in after op, none if op's
// answer is impossible from e.
func step(e entity, in input, out output) []entity {
	if out.unknown {
		return append([]entity{e}, applied(e, in)...)
	}
	if in.kind.onRegister() {
		return stepRegister(e, in, out)
	}
	if out.status == 403 {
		if e.exists {
			return []entity{e} // forbidden: nothing done, to an app that is listed
		}
		return nil
	}
	switch in.kind {
	case opRegister, opSubmitDriver:
		if out.status != 0 {
			return []entity{e} // refused: nothing made
		}
		if !e.exists {
			return []entity{{exists: true, id: out.id, limit: -1}}
		}
		if next, ok := e.withID(out.id); ok {
			return []entity{next} // a repeat gets the first one's id
		}
		return nil
	}
	// The others name an entity by its id.
	if out.status == 404 {
		if !e.exists {
			return []entity{e}
		}
		return nil // it existed: a 404 is a loss
	}
	if !e.exists {
		return nil
	}
	e, ok := e.withID(in.id)
	if !ok {
		return nil
	}
	switch in.kind {
	case opKill:
		switch {
		case e.final == "" && out.state == "KILLED":
			e.final = "KILLED"
			return []entity{e}
		case e.final != "" && out.state == e.final:
			return []entity{e}
		}
	case opKillDriver:
		switch {
		case e.final == "" && out.ended && out.state == "KILLED":
			e.final = "KILLED"
			return []entity{e}
		case e.final == "" && !e.killReq && out.lost:
			e.final = out.state // its worker was lost before the kill
			return []entity{e}
		case e.final == "" && !out.ended && out.killReq:
			e.killReq = true
			return []entity{e}
		case e.final != "" && out.state == e.final:
			return []entity{e}
		}
	case opRead:
		if out.ended && out.state == e.final || !out.ended && e.final == "" && out.limit == e.limit {
			return []entity{e}
		}
	case opReadDriver:
		switch {
		case out.ended && out.state == e.final:
			return []entity{e}
		case out.ended && e.final == "" && e.killReq && out.state == "KILLED":
			e.final = "KILLED" // its worker carried out the accepted kill
			return []entity{e}
		case e.final == "" && !e.killReq && out.lost:
			e.final = out.state // its worker was lost
			return []entity{e}
		case !out.ended && e.final == "" && out.killReq == e.killReq:
			return []entity{e}
		}
	case opLimit:
		switch {
		case out.status == 0 && e.final == "":
			e.limit = in.n
			return []entity{e}
		case out.status == 409 && e.final != "":
			return []entity{e}
		}
	}
	return nil
}

// stepRegister is step for a queue's or a tenant's op.
func stepRegister(e entity, in input, out output) []entity {
	switch in.kind {
	case opPutQueue:
		switch {
		case out.status == 403:
			return []entity{e}
		case out.status == 0 && out.spec == in.spec: // it answers the settings it holds now
			return []entity{{exists: true, limit: -1, spec: in.spec}}
		}
	case opDeleteQueue, opDeleteTenant:
		switch {
		case out.status == 0:
			return []entity{{limit: -1}}
		case out.status == 404 && !e.exists, out.status == 409 && e.exists, out.status == 403:
			return []entity{e}
		}
	case opCreateTenant:
		switch {
		case out.status == 0 && !e.exists:
			return []entity{{exists: true, limit: -1, spec: in.spec}}
		case out.status == 409 && e.exists:
			return []entity{e}
		}
	case opReadQueue, opReadTenant:
		if out.status == 404 && !e.exists || out.status == 0 && e.exists && out.spec == e.spec {
			return []entity{e}
		}
	}
	return nil
}

// applied returns the states an op of unknown outcome may have left, if it
// took effect.
func applied(e entity, in input) []entity {
	if in.probe {
		return nil
	}
	switch in.kind {
	case opPutQueue:
		return []entity{{exists: true, limit: -1, spec: in.spec}}
	case opDeleteQueue, opDeleteTenant:
		if e.exists {
			return []entity{{limit: -1}}
		}
	case opCreateTenant:
		if !e.exists {
			return []entity{{exists: true, limit: -1, spec: in.spec}}
		}
	case opRegister, opSubmitDriver:
		if !e.exists {
			return []entity{{exists: true, limit: -1}}
		}
	case opKill:
		if e.exists && e.final == "" {
			e.final = "KILLED"
			return []entity{e}
		}
	case opKillDriver:
		if e.exists && e.final == "" {
			requested, killed := e, e
			requested.killReq, killed.final = true, "KILLED"
			return []entity{requested, killed}
		}
	case opLimit:
		if e.exists && e.final == "" {
			e.limit = in.n
			return []entity{e}
		}
	}
	return nil
}

// model is the porcupine model: a partition per key.
var model = porcupine.NondeterministicModel{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[string][]porcupine.Operation{}
		var keys []string
		for _, op := range history {
			k := op.Input.(input).key
			if _, ok := byKey[k]; !ok {
				keys = append(keys, k)
			}
			byKey[k] = append(byKey[k], op)
		}
		out := make([][]porcupine.Operation, 0, len(keys))
		for _, k := range keys {
			out = append(out, byKey[k])
		}
		return out
	},
	Init: func() []any { return []any{entity{limit: -1}} },
	Step: func(state, in, out any) []any {
		var next []any
		for _, e := range step(state.(entity), in.(input), out.(output)) {
			next = append(next, e)
		}
		return next
	},
	DescribeOperation: func(in, out any) string {
		i, o := in.(input), out.(output)
		what := fmt.Sprintf("%s %s", i.kind, i.key)
		if i.id != "" && !i.kind.onRegister() {
			what += " " + i.id
		}
		if i.by != "" && i.by != operator {
			what += " by " + i.by
		}
		if i.kind == opLimit {
			what += fmt.Sprintf(" to %d", i.n)
		}
		if i.spec != "" {
			what += " [" + i.spec + "]"
		}
		if i.via != "" {
			what += " through " + i.via
		}
		switch {
		case o.unknown:
			return what + " → ?"
		case o.status != 0:
			return fmt.Sprintf("%s → %d", what, o.status)
		case i.kind == opRegister || i.kind == opSubmitDriver:
			return what + " → " + o.id
		case i.kind.onRegister():
			return what + " → [" + o.spec + "]"
		case o.lost:
			return fmt.Sprintf("%s → %s (its worker %s lost) killReq %v", what, o.state, o.worker, o.killReq)
		default:
			return fmt.Sprintf("%s → %s limit %d killReq %v", what, o.state, o.limit, o.killReq)
		}
	},
	DescribeState: func(state any) string { return fmt.Sprintf("%+v", state.(entity)) },
}

// pending is the return time given to ops of unknown outcome: they may
// take effect at any time after they were sent.
const pending = math.MaxInt64
