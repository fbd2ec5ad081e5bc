package gpushare

import "slices"

// A filter an app brings (placement.App.Fits: the master's label
// constraints, free ports, workers it failed on) says which workers it may
// use at all, and may answer differently from one round to the next: the
// fleet keeps no answer of it, and asks it only of the workers a decision
// would take (past maxRefused refusals in one decision, of each worker
// that would beat the best found so far). The scores do not depend on it.

// maxRefused bounds the best-scored workers a decision may find refused
// one after another before it looks for the best of those the filter
// takes in one pass over every worker.
const maxRefused = 16

// bestWhere is the first worker with k's highest score among those ok
// takes, -1 when none that ok takes can hold an executor of k: k.best()
// with ok's refusals hidden one by one (each costs a block's top), then,
// past maxRefused of them, one pass over every worker.
func (k *fleetKind) bestWhere(ok func(int) bool) int {
	if ok == nil {
		return k.best()
	}
	type hidden struct {
		at    int
		score uint8
	}
	var refused [maxRefused]hidden
	n := 0
	defer func() { // the scores as they were
		for _, h := range refused[:n] {
			k.score[h.at] = h.score
			b := h.at / scoreBlock
			k.top[b] = max(k.top[b], h.score)
		}
	}()
	for {
		at := k.best()
		if at < 0 || ok(at) {
			return at
		}
		if n == maxRefused {
			return k.bestOfAll(ok)
		}
		refused[n] = hidden{at, k.score[at]}
		n++
		k.score[at] = 0
		b := at / scoreBlock
		k.top[b] = slices.Max(k.block(b))
	}
}

// bestOfAll is bestWhere by one pass over the workers: a block whose top
// cannot beat the best found so far is skipped, and ok is asked only of a
// worker that would beat it.
func (k *fleetKind) bestOfAll(ok func(int) bool) int {
	best, at := uint8(0), -1
	for b, top := range k.top {
		if top <= best {
			continue
		}
		lo := b * scoreBlock
		for i, s := range k.block(b) {
			if s > best && ok(lo+i) {
				best, at = s, lo+i
			}
		}
	}
	return at
}
