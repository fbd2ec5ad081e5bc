package persistence

import (
	"fmt"
	"slices"

	"github.com/berth-cluster/berth/wire"
)

// EndedExecutorsKept bounds the ended executors kept for an app, in the
// state and in the master's memory: the last ones to end. MaxEndedMessage
// bounds the reason each keeps (a start error quotes the app's command):
// a tenant's crashing executors cannot swell every master's state.
const (
	EndedExecutorsKept = 100
	MaxEndedMessage    = 1024
)

// BoundEndedStatus is st as it is kept: its message cut to MaxEndedMessage
// (saying so) and no drain deadline (its worker's drain is no longer its
// own). The master keeps the same in its memory.
func BoundEndedStatus(st wire.ExecutorStatus) wire.ExecutorStatus {
	st.Message, st.DrainDeadline = wire.Clip(st.Message, MaxEndedMessage), nil
	return st
}

// EndedExecutor is an executor's status as it ended (a command's payload).
type EndedExecutor struct {
	AppID  string              `json:"appId"`
	Status wire.ExecutorStatus `json:"status"`
}

// EndedExecutorsRecord is what an active app's status lists of its ended
// executors, oldest first, at most EndedExecutorsKept: a new leader lists
// them as the one before did. Without it an app's executors that ended
// before a failover vanished from its status (and its logs' links), and
// the app's final record listed only those ended under the last leader.
type EndedExecutorsRecord struct {
	AppID     string                `json:"appId"`
	Executors []wire.ExecutorStatus `json:"executors"`
}

// endedExecutor keeps c's status for its app if the executor is still
// placed (its end not yet written by another command), its app active and
// its end not kept already (whatever order a log holds commands in, no id
// is listed twice). The record is replaced, never changed in place:
// states share records.
func (s *State) endedExecutor(c Command, touched func(Key)) {
	e := c.Ended
	if _, placed := s.Executors[ExecutorKey(e.AppID, e.Status.ID)]; !placed {
		return
	}
	if app := s.Apps[e.AppID]; app == nil || app.Finished() {
		return
	}
	var kept []wire.ExecutorStatus
	if old := s.EndedExecutors[e.AppID]; old != nil {
		if slices.ContainsFunc(old.Executors, func(st wire.ExecutorStatus) bool { return st.ID == e.Status.ID }) {
			return
		}
		kept = old.Executors[max(len(old.Executors)-EndedExecutorsKept+1, 0):]
	}
	// One allocation of what stays and the new end (a record is never
	// changed in place, so each end copies the app's list).
	next := EndedExecutorsRecord{AppID: e.AppID, Executors: make([]wire.ExecutorStatus, 0, len(kept)+1)}
	next.Executors = append(append(next.Executors, kept...), BoundEndedStatus(e.Status))
	endedExecutorsKind.put(s, &next, touched)
}

// repairEndedExecutors drops what an earlier version could leave of the
// ended executors, harmless and not corruption: those of an app that is not
// active (its final record lists them), an id listed twice (the first
// end stands), more than EndedExecutorsKept. It returns how many it dropped.
func (s *State) repairEndedExecutors() int {
	dropped := 0
	for k, r := range s.EndedExecutors {
		if r == nil {
			continue // Validate's to refuse
		}
		if app := s.Apps[k]; app == nil || app.Finished() {
			delete(s.EndedExecutors, k)
			dropped++
			continue
		}
		seen := map[int]bool{}
		kept := KeepLastEnded(slices.DeleteFunc(slices.Clone(r.Executors), func(st wire.ExecutorStatus) bool {
			dup := seen[st.ID]
			seen[st.ID] = true
			return dup
		}))
		if len(kept) != len(r.Executors) {
			dropped += len(r.Executors) - len(kept)
			s.EndedExecutors[k] = &EndedExecutorsRecord{AppID: r.AppID, Executors: kept}
		}
	}
	return dropped
}

// KeepLastEnded is list without those beyond the last EndedExecutorsKept.
func KeepLastEnded[T any](list []T) []T {
	return list[max(len(list)-EndedExecutorsKept, 0):]
}

// validateEndedExecutors checks that the ended executors kept are of
// active apps, bounded, and each named once.
func (s *State) validateEndedExecutors() error {
	return firstProblem(s.EndedExecutors, func(k string, r *EndedExecutorsRecord) error {
		if app := s.Apps[k]; app == nil || app.Finished() {
			return fmt.Errorf("endedExecutors[%q]: the app is not active", k)
		}
		if len(r.Executors) > EndedExecutorsKept {
			return fmt.Errorf("endedExecutors[%q] holds %d executors, over %d", k, len(r.Executors), EndedExecutorsKept)
		}
		seen := map[int]bool{}
		for _, st := range r.Executors {
			if st.ID < 0 || seen[st.ID] {
				return fmt.Errorf("endedExecutors[%q]: executor id %d is negative or listed twice", k, st.ID)
			}
			seen[st.ID] = true
		}
		return nil
	})
}
