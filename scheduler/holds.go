package scheduler

import (
	"fmt"
	"maps"
	"slices"
	"time"
)

// Room holds (docs/QUEUES.md, "Preemption"). Executors taken back for a
// queue end one at a time, each within the grace; meanwhile each round
// found the room freed too small for the owed executor and gave it, in
// pass 2 or to a queue just below its fair share again, back to the apps
// it was taken from, which relaunched on it: 1,424 preemptions in 35 s,
// and the owed queue never placed. So the worker a preemption frees room
// on is held for the queue it was taken for: no other queue's executor
// starts there until that queue's need is placed (or it is owed nothing
// any more), the worker leaves, or the victims' grace and holdSlack have
// passed (YARN reserves a node for the container it preempts for, in the
// same way).

// RoomHold is room on a worker held for a queue since a preemption.
type RoomHold struct {
	Queue string
	Since time.Time
}

// holdSlack is how long a hold outlasts the victims' grace: rounds enough
// for the owed queue to be placed once they are gone.
const holdSlack = 10 * time.Second

// liveHolds is the view's holds still in force at the round's start: on a
// placeable worker, for a queue that exists, within the grace and slack.
func (r *round) liveHolds() map[string]RoomHold {
	var out map[string]RoomHold
	for id, h := range r.v.Holds {
		w, ok := r.v.Fleet.Worker(id)
		if !ok || !w.Placeable() || r.queues[h.Queue] == nil || r.now.Sub(h.Since) >= r.cfg.PreemptionGrace+holdSlack {
			continue
		}
		if out == nil {
			out = map[string]RoomHold{}
		}
		out[id] = h
	}
	return out
}

// heldFrom reports whether worker id's room is held for a queue other
// than queue.
func (r *round) heldFrom(id, queue string) bool {
	h, ok := r.holds[id]
	return ok && h.Queue != queue
}

// holdsAgainst reports whether some hold keeps queue's apps off a worker.
func (r *round) holdsAgainst(queue string) bool {
	for _, h := range r.holds {
		if h.Queue != queue {
			return true
		}
	}
	return false
}

// heldReason says which worker's room of holds is held from queue, and
// for whom ("" if none is).
func heldReason(holds map[string]RoomHold, queue string) string {
	for _, id := range slices.Sorted(maps.Keys(holds)) {
		if h := holds[id]; h.Queue != queue {
			return fmt.Sprintf("the room freed on worker %s is held for queue %s, for which executors were taken back there", id, h.Queue)
		}
	}
	return ""
}

// holdsFor is a worker whose room is held for queue, or "".
func (r *round) holdsFor(queue string) string {
	for _, id := range slices.Sorted(maps.Keys(r.plan.Holds)) {
		if r.plan.Holds[id].Queue == queue {
			return id
		}
	}
	return ""
}

// keepHolds puts in the plan the holds of the queues still owed, and one
// on each worker where this round takes executors back.
func (r *round) keepHolds(owed map[string]bool, taken map[string]string) {
	for id, h := range r.holds {
		if owed[h.Queue] {
			r.hold(id, h)
		}
	}
	for id, q := range taken {
		r.hold(id, RoomHold{Queue: q, Since: r.now})
	}
	// A round at every tick while room is held: a hold that lapses frees
	// its room for everyone, with no event to say so.
	r.plan.Owing = r.plan.Owing || len(r.plan.Holds) > 0
	// What the queues' apps are told is the holds the round leaves, not
	// those it began with: a hold given back this round (its queue
	// placed) must not go on being the reason of apps that wait, until
	// an event brings the next round.
	for name, o := range r.plan.Queues {
		if o.Held != "" && o.Held == heldReason(r.holds, name) {
			o.Held = heldReason(r.plan.Holds, name)
			r.plan.Queues[name] = o
		}
	}
}

func (r *round) hold(id string, h RoomHold) {
	if r.plan.Holds == nil {
		r.plan.Holds = map[string]RoomHold{}
	}
	r.plan.Holds[id] = h
}
