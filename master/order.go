package master

import (
	"cmp"
	"maps"
	"slices"
	"time"
)

// Deterministic orders of the master's maps, so that transitions over many
// entities (a worker's executors, the recovered records) always run in the
// same order.

func sortedExecutors[K comparable](m map[K]*executorInfo) []*executorInfo {
	return slices.SortedFunc(maps.Values(m), func(a, b *executorInfo) int {
		if c := cmp.Compare(a.app.rec.ID, b.app.rec.ID); c != 0 {
			return c
		}
		return cmp.Compare(a.id, b.id)
	})
}

func sortedDrivers(m map[string]*driverInfo) []*driverInfo {
	return slices.SortedFunc(maps.Values(m), func(a, b *driverInfo) int { return cmp.Compare(a.rec.ID, b.rec.ID) })
}

// sortedRecords returns the records of m ordered by key, each key computed
// once (keys format times: computing them in the comparison would cost
// n log n formats).
func sortedRecords[R any](m map[string]*R, key func(*R) string) []*R {
	type keyed struct {
		k string
		r *R
	}
	ks := make([]keyed, 0, len(m))
	for _, r := range m {
		ks = append(ks, keyed{key(r), r})
	}
	slices.SortFunc(ks, func(a, b keyed) int { return cmp.Compare(a.k, b.k) })
	out := make([]*R, len(ks))
	for i, x := range ks {
		out[i] = x.r
	}
	return out
}

func sortTime(t time.Time) string { return t.UTC().Format("20060102150405.000000000") }

func endTime(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return *t
}

// appendBounded appends x and drops the oldest beyond limit, telling drop.
func appendBounded[T any](list []T, x T, limit int, drop func(T)) []T {
	list = append(list, x)
	if limit > 0 && len(list) > limit {
		for _, old := range list[:len(list)-limit] {
			drop(old)
		}
		list = slices.Delete(list, 0, len(list)-limit)
	}
	return list
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// listed finds id among active entities, then among the completed ones
// (a short list, oldest first).
func listed[T any](active map[string]*T, completed []*T, id string, idOf func(*T) string) *T {
	if x := active[id]; x != nil {
		return x
	}
	for _, x := range completed {
		if idOf(x) == id {
			return x
		}
	}
	return nil
}
