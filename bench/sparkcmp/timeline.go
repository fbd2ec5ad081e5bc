package sparkcmp

import (
	"cmp"
	"slices"
	"strconv"
	"time"
)

// executor is one executor as the driver saw it: registered (added) and,
// unless it still runs, removed.
type executor struct {
	id      string
	cores   int
	host    string
	added   time.Time
	removed time.Time // zero while it runs
}

// executors reads the driver's added and removed events, in the order of
// registration.
func executors(evs []event) []executor {
	var out []executor
	index := map[string]int{}
	for _, ev := range evs {
		switch ev.kind {
		case "added":
			if len(ev.fields) < 3 {
				continue
			}
			cores, _ := strconv.Atoi(ev.fields[1])
			index[ev.fields[0]] = len(out)
			out = append(out, executor{id: ev.fields[0], cores: cores, host: ev.fields[2], added: ev.at})
		case "removed":
			if len(ev.fields) < 1 {
				continue
			}
			if i, ok := index[ev.fields[0]]; ok {
				out[i].removed = ev.at
			}
		}
	}
	slices.SortStableFunc(out, func(a, b executor) int { return a.added.Compare(b.added) })
	return out
}

// liveAt is the executors registered at t and not removed by then.
func liveAt(execs []executor, t time.Time) []executor {
	var out []executor
	for _, e := range execs {
		if !e.added.After(t) && (e.removed.IsZero() || e.removed.After(t)) {
			out = append(out, e)
		}
	}
	return out
}

// firstLive is the first moment not before after at which the executors
// that keep pass number at least n with at least cores cores in all;
// false if that never happened.
func firstLive(execs []executor, n, cores int, after time.Time, keep func(executor) bool) (time.Time, bool) {
	type change struct {
		at    time.Time
		delta int // +1 registered, -1 removed
		cores int
	}
	var changes []change
	for _, e := range execs {
		if keep != nil && !keep(e) {
			continue
		}
		changes = append(changes, change{e.added, 1, e.cores})
		if !e.removed.IsZero() {
			changes = append(changes, change{e.removed, -1, -e.cores})
		}
	}
	// Removals first at one instant: an executor replaced in the same
	// millisecond is not counted twice.
	slices.SortStableFunc(changes, func(a, b change) int {
		return cmp.Or(a.at.Compare(b.at), cmp.Compare(a.delta, b.delta))
	})
	count, sum := 0, 0
	for _, c := range changes {
		count += c.delta
		sum += c.cores
		if count >= n && sum >= cores {
			return maxTime(c.at, after), true
		}
	}
	return time.Time{}, false
}

// firstLiveAfter is firstLive counting only what held at or after after:
// the state at after, then the changes past it.
func firstLiveAfter(execs []executor, n, cores int, after time.Time, keep func(executor) bool) (time.Time, bool) {
	var kept []executor
	for _, e := range execs {
		if keep != nil && !keep(e) {
			continue
		}
		if !e.removed.IsZero() && !e.removed.After(after) {
			continue // gone before: not part of the count after
		}
		kept = append(kept, e)
	}
	return firstLive(kept, n, cores, after, nil)
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// coreCounts lists the executors' cores, in their order.
func coreCounts(execs []executor) []int {
	out := make([]int, len(execs))
	for i, e := range execs {
		out[i] = e.cores
	}
	return out
}

// busiestHost is the host holding the most of the executors (the most
// cores on a tie, then the first in hosts): the worker whose loss costs
// the app most.
func busiestHost(execs []executor, hosts []string) (int, bool) {
	best, bestN, bestCores := -1, 0, 0
	for i, h := range hosts {
		n, c := 0, 0
		for _, e := range execs {
			if e.host == h {
				n++
				c += e.cores
			}
		}
		if n > bestN || (n == bestN && n > 0 && c > bestCores) {
			best, bestN, bestCores = i, n, c
		}
	}
	return best, best >= 0
}
