package chaos

import (
	"fmt"
	"math"

	"github.com/anishathalye/porcupine"
)

// The model the history is checked against, one submission key (one app,
// or one driver) per partition, as etcd's robustness tests check theirs
// with porcupine.
//
// Workload apps never get executors (their executor size fits no worker)
// and their leases are kept, so the only way one ends is a kill; workload
// drivers run `sleep` for longer than the test and are not supervised, so
// one ends only once its kill was accepted. Anything else a read shows is
// a broken promise.

type opKind int

const (
	opRegister opKind = iota + 1
	opKill
	opRead
	opLimit
	opSubmitDriver
	opKillDriver
	opReadDriver
)

func (k opKind) String() string {
	return [...]string{"", "register", "kill", "read", "limit", "submitDriver", "killDriver", "readDriver"}[k]
}

// input is what a client asked.
type input struct {
	kind opKind
	key  string // the idempotency key of the submission the op concerns
	id   string // the app's or driver's id, for ops on an existing one
	n    int    // the executor limit asked for
}

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
}

// entity is the model's state of one key: an app or a driver.
type entity struct {
	exists  bool
	id      string // "" while it exists only by an op of unknown outcome
	final   string // "" while active
	limit   int    // -1: no executor limit
	killReq bool
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

// applied returns the states an op of unknown outcome may have left, if it
// took effect.
func applied(e entity, in input) []entity {
	switch in.kind {
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
		if i.id != "" {
			what += " " + i.id
		}
		if i.kind == opLimit {
			what += fmt.Sprintf(" to %d", i.n)
		}
		switch {
		case o.unknown:
			return what + " → ?"
		case o.status != 0:
			return fmt.Sprintf("%s → %d", what, o.status)
		case i.kind == opRegister || i.kind == opSubmitDriver:
			return what + " → " + o.id
		default:
			return fmt.Sprintf("%s → %s limit %d killReq %v", what, o.state, o.limit, o.killReq)
		}
	},
	DescribeState: func(state any) string { return fmt.Sprintf("%+v", state.(entity)) },
}

// pending is the return time given to ops of unknown outcome: they may
// take effect at any time after they were sent.
const pending = math.MaxInt64
