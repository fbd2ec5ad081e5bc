package e2e

// Lookups in a master's view (wire.ClusterStatus).

import (
	"fmt"
	"slices"
	"strings"

	"github.com/berth-cluster/berth/wire"
)

// appStatus finds an app, active or completed, in a view.
func appStatus(st wire.ClusterStatus, id string) (wire.AppStatus, bool) {
	for _, a := range append(st.ActiveApps, st.CompletedApps...) {
		if a.ID == id {
			return a, true
		}
	}
	return wire.AppStatus{}, false
}

// workerIn finds a worker in a view.
func workerIn(st wire.ClusterStatus, id string) (wire.WorkerStatus, bool) {
	for _, w := range st.Workers {
		if w.ID == id {
			return w, true
		}
	}
	return wire.WorkerStatus{}, false
}

// executorsIn returns an app's executors in the given state.
func executorsIn(a wire.AppStatus, state wire.ExecutorState) []wire.ExecutorStatus {
	return slices.DeleteFunc(slices.Clone(a.Executors), func(e wire.ExecutorStatus) bool { return e.State != state })
}

// liveExecutors returns an app's executors that are LAUNCHING or RUNNING.
func liveExecutors(a wire.AppStatus) []wire.ExecutorStatus {
	return slices.DeleteFunc(slices.Clone(a.Executors), func(e wire.ExecutorStatus) bool { return e.State.Finished() })
}

// executorsByID returns an app's executors in a state, by id, in a view.
func executorsByID(st wire.ClusterStatus, appID string, state wire.ExecutorState) map[int]wire.ExecutorStatus {
	out := map[int]wire.ExecutorStatus{}
	if a, ok := appStatus(st, appID); ok {
		for _, e := range executorsIn(a, state) {
			out[e.ID] = e
		}
	}
	return out
}

// describeExecs describes executors for failure messages:
// id@worker:cores/STATE.
func describeExecs(a wire.AppStatus) string {
	parts := make([]string, 0, len(a.Executors))
	for _, e := range a.Executors {
		parts = append(parts, fmt.Sprintf("%d@%s:%d/%s", e.ID, e.WorkerID, e.Cores, e.State))
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// appIDs lists the ids of every app (active and completed) of a view.
func appIDs(st wire.ClusterStatus) []string {
	return sortedIDs(func(a wire.AppStatus) string { return a.ID }, st.ActiveApps, st.CompletedApps)
}

// driverIDs lists the ids of every driver (active and completed) of a view.
func driverIDs(st wire.ClusterStatus) []string {
	return sortedIDs(func(d wire.DriverStatus) string { return d.ID }, st.ActiveDrivers, st.CompletedDrivers)
}

func sortedIDs[T any](id func(T) string, lists ...[]T) []string {
	var ids []string
	for _, l := range lists {
		for _, x := range l {
			ids = append(ids, id(x))
		}
	}
	slices.Sort(ids)
	return ids
}

// containsAll reports whether have holds every string of want.
func containsAll(have, want []string) bool {
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}
