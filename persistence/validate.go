package persistence

import (
	"errors"
	"fmt"
	"slices"

	"github.com/berth-cluster/berth/wire"
)

// errInvalidState wraps every invariant a State breaks.
var errInvalidState = errors.New("invalid state")

// Validate reports the first invariant s breaks (in a fixed order, so the
// same state always gets the same message), or nil. Apply keeps them all;
// a state read back from a snapshot or a file is checked with Validate
// before it is used, since the code that reads a State (Apply, the master's
// recovery) dereferences its records and trusts its keys:
//   - every record map exists (an optional kind's may be nil,
//     recordKinds) and holds no nil record;
//   - every record is keyed by its id (an executor by appId/executorId),
//     and no id is empty;
//   - every executor belongs to an app that has not ended, and runs on a
//     registered worker;
//   - the index of ended apps and drivers, once built, lists exactly the
//     ended records, oldest first.
func (s *State) Validate() error {
	for _, k := range recordKinds {
		if k.missing(s) {
			return fmt.Errorf("%w: a map of records is missing", errInvalidState)
		}
	}
	// In order: the later checks dereference what the earlier ones vouch
	// for (the keys of every kind first, in recordKinds' order).
	for _, k := range recordKinds {
		if err := k.validate(s); err != nil {
			return fmt.Errorf("%w: %w", errInvalidState, err)
		}
	}
	for _, check := range []func() error{
		s.validateExecutors,
		s.validateEndedExecutors,
		s.validateWorkerResources,
		s.validateEndedIndexes,
		s.validateEndedSessions,
		s.validateAudit,
	} {
		if err := check(); err != nil {
			return fmt.Errorf("%w: %w", errInvalidState, err)
		}
	}
	return nil
}

// Repair drops the executor records no app or worker holds any more (an
// earlier version could leave some: a placement committed after its
// worker's removal) and returns how many it dropped. They are harmless
// leftovers, not corruption, so a state read back repairs them instead of
// being refused; every master reading the same state drops the same ones.
// A state that is malformed otherwise (a null record, a key that is not its
// record's id) is left for Validate to refuse.
func (s *State) Repair() int {
	dropped := 0
	for k, e := range s.Executors {
		if e == nil {
			continue
		}
		if app := s.Apps[e.AppID]; app == nil || app.Finished() || s.Workers[e.WorkerID] == nil {
			delete(s.Executors, k)
			dropped++
		}
	}
	return dropped + s.repairEndedExecutors()
}

// key is the id a record is kept under in its map.
func (r *AppRecord) key() string    { return r.ID }
func (r *DriverRecord) key() string { return r.ID }
func (r *WorkerRecord) key() string { return r.ID }
func (r *MasterRecord) key() string { return r.ID }

// validateKeys checks that every record of m is there and keyed by its id.
func validateKeys[R any](b Bucket, m map[string]*R, id func(*R) string) error {
	return firstProblem(m, func(k string, r *R) error {
		switch {
		case r == nil:
			return fmt.Errorf("%s[%q] is null", b, k)
		case id(r) != k:
			return fmt.Errorf("%s[%q] holds the record of %q", b, k, id(r))
		case k == "":
			return fmt.Errorf("%s holds a record without an id", b)
		}
		return nil
	})
}

// validateExecutors checks that every executor is of an active app and on
// a registered worker (its key and nil-ness are checked by validateKeys).
func (s *State) validateExecutors() error {
	return firstProblem(s.Executors, func(k string, e *ExecutorRecord) error {
		app := s.Apps[e.AppID]
		switch {
		case e.ID < 0:
			return fmt.Errorf("executors[%q] has a negative id", k)
		case app == nil:
			return fmt.Errorf("executors[%q] belongs to app %q, which the state does not hold", k, e.AppID)
		case app.Finished():
			return fmt.Errorf("executors[%q] belongs to app %q, which ended", k, e.AppID)
		case s.Workers[e.WorkerID] == nil:
			return fmt.Errorf("executors[%q] runs on worker %q, which is not registered", k, e.WorkerID)
		}
		if err := grantOffered(e.Resources, s.Workers[e.WorkerID].Resources); err != nil {
			return fmt.Errorf("executors[%q]: %w", k, err)
		}
		return nil
	})
}

// validateWorkerResources checks every worker's offer.
func (s *State) validateWorkerResources() error {
	return firstProblem(s.Workers, func(k string, w *WorkerRecord) error {
		if err := wire.CheckResourceOffer(w.Resources); err != nil {
			return fmt.Errorf("workers[%q]: %w", k, err)
		}
		return nil
	})
}

// grantOffered checks that a grant names only addresses the worker offers.
func grantOffered(g wire.ResourceGrants, offer map[string][]string) error {
	for name, grant := range g {
		if len(grant.Addresses) == 0 || grant.Share < 0 || grant.Share >= 1 {
			return fmt.Errorf("resource %s: grant %+v is malformed", name, grant)
		}
		for _, a := range grant.Addresses {
			if !slices.Contains(offer[name], a) {
				return fmt.Errorf("resource %s: address %q is not offered by its worker", name, a)
			}
		}
	}
	return nil
}

// firstProblem returns the problem of the smallest key that has one: the
// same state always gets the same message, without sorting every key.
func firstProblem[V any](m map[string]V, problem func(string, V) error) error {
	var key string
	var err error
	for k, v := range m {
		if e := problem(k, v); e != nil && (err == nil || k < key) {
			key, err = k, e
		}
	}
	return err
}

// validateEndedIndexes checks the indexes of ended apps and drivers against
// the records they index.
func (s *State) validateEndedIndexes() error {
	if err := validateEnded(BucketApps, &s.endedApps, s.Apps); err != nil {
		return err
	}
	return validateEnded(BucketDrivers, &s.endedDrivers, s.Drivers)
}

// validateEnded checks an ended index against the records it indexes.
func validateEnded[R any, P endingRecord[R]](b Bucket, x *endedIndex, m map[string]*R) error {
	if !x.known {
		return nil // built from the records when first needed
	}
	var want endedIndex
	build[R, P](&want, m)
	if !slices.Equal(x.order, want.order) {
		return fmt.Errorf("the index of ended %s (%d records) does not match the %d ended records held", b, len(x.order), len(want.order))
	}
	return nil
}

// validateEndedSessions checks that every ended UI session has an id.
func (s *State) validateEndedSessions() error {
	if _, ok := s.EndedSessions[""]; ok {
		return errors.New("an ended session without an id")
	}
	return nil
}

// validateAudit checks that the audit log's count covers what it keeps.
func (s *State) validateAudit() error {
	if uint64(len(s.Audit)) > s.AuditCount {
		return fmt.Errorf("the audit log keeps %d entries of %d ever written", len(s.Audit), s.AuditCount)
	}
	return nil
}
