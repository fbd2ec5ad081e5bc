package persistence

import (
	"fmt"

	"github.com/berth-cluster/berth/wire"
)

// commandKinds is the one place a command type is defined: its tag, its
// name, the field of Command it carries and how it changes the State.
// Check, Apply, Decode and Type.String all read it, so adding a command is
// adding an entry here (and a constructor). A command that only puts or
// deletes a record by key applies through its kind (recordKinds): putFrom,
// deleteByID.
var commandKinds = []commandKind{
	{TypeBumpEpoch, "BumpEpoch", noPayload, (*State).bumpEpoch},
	{TypePutApp, "PutApp", appPayload, (*State).putApp},
	{TypeDeleteApp, "DeleteApp", idPayload, (*State).deleteApp},
	{TypePutDriver, "PutDriver", driverPayload, (*State).putDriver},
	{TypeDeleteDriver, "DeleteDriver", idPayload, (*State).deleteDriver},
	{TypePutWorker, "PutWorker", workerPayload, workerKind.putFrom(func(c Command) *WorkerRecord { return c.Worker })},
	{TypeDeleteWorker, "DeleteWorker", idPayload, (*State).deleteWorker},
	{TypePutMaster, "PutMaster", masterPayload, masterKind.putFrom(func(c Command) *MasterRecord { return c.Master })},
	{TypeDeleteMaster, "DeleteMaster", idPayload, masterKind.deleteByID},
	{TypePutExecutor, "PutExecutor", executorPayload, (*State).putExecutor},
	{TypeDeleteExecutor, "DeleteExecutor", idPayload, executorKind.deleteByID},
	{TypeEndSession, "EndSession", sessionPayload, (*State).endSession},
	{TypePutQueue, "PutQueue", queuePayload, queueKind.putFrom(func(c Command) *QueueRecord { return c.Queue })},
	{TypeDeleteQueue, "DeleteQueue", idPayload, queueKind.deleteByID},
	{TypePutTenant, "PutTenant", tenantPayload, tenantKind.putFrom(func(c Command) *TenantRecord { return c.Tenant })},
	{TypeDeleteTenant, "DeleteTenant", idPayload, tenantKind.deleteByID},
	{TypeAudit, "Audit", auditPayload, (*State).audit},
	{TypeRestore, "Restore", restorePayload, (*State).restore},
	{TypeEndedExecutor, "EndedExecutor", endedPayload, (*State).endedExecutor},
}

// commandKind is everything the package knows about one command type.
type commandKind struct {
	tag     Type
	name    string
	payload payload
	// apply changes the state; it runs only once the payload is valid, and
	// tells touched every record it puts or deletes.
	apply func(s *State, c Command, touched func(Key))
}

// payload is the field of Command a type carries, and what makes it usable.
type payload struct {
	field string // its JSON name, for messages
	valid func(Command) bool
}

var (
	noPayload = payload{"none", func(Command) bool { return true }}
	// A Delete of an id the state does not hold changes nothing, so any id
	// (even "") is valid.
	idPayload      = payload{"id", func(Command) bool { return true }}
	appPayload     = payload{"app", func(c Command) bool { return c.App != nil && c.App.ID != "" }}
	driverPayload  = payload{"driver", func(c Command) bool { return c.Driver != nil && c.Driver.ID != "" }}
	workerPayload  = payload{"worker", func(c Command) bool { return c.Worker != nil && c.Worker.ID != "" }}
	masterPayload  = payload{"master", func(c Command) bool { return c.Master != nil && c.Master.ID != "" }}
	sessionPayload = payload{"session", func(c Command) bool { return c.Session != nil && c.Session.ID != "" }}
	queuePayload   = payload{"queue", func(c Command) bool { return c.Queue != nil && c.Queue.Name != "" }}
	tenantPayload  = payload{"tenant", func(c Command) bool { return c.Tenant != nil && c.Tenant.Name != "" }}
	auditPayload   = payload{"audit", func(c Command) bool { return c.Audit != nil }}
	// A restore must carry a state Apply can build on (restore.go).
	restorePayload = payload{"restore", func(c Command) bool {
		return c.Restore != nil && c.Restore.State != nil && c.Restore.State.Validate() == nil
	}}
	endedPayload = payload{"ended", func(c Command) bool {
		return c.Ended != nil && c.Ended.AppID != "" && c.Ended.Status.ID >= 0
	}}
	executorPayload = payload{"executor", func(c Command) bool {
		return c.Executor != nil && c.Executor.AppID != "" && c.Executor.ID >= 0
	}}
)

// kindByTag indexes commandKinds by tag.
var kindByTag = indexKinds(commandKinds)

// indexKinds refuses, at start, a table that would make a log ambiguous: a
// tag used twice, or one that collides with the batch tag or the flag.
func indexKinds(kinds []commandKind) (byTag [256]*commandKind) {
	for i := range kinds {
		k := &kinds[i]
		if k.tag == 0 || k.tag == typeBatch || k.tag&IgnoreUnknownTypeFlag != 0 || byTag[k.tag] != nil {
			panic(fmt.Sprintf("persistence: command tag %d of %s is reserved or used twice", uint8(k.tag), k.name))
		}
		byTag[k.tag] = k
	}
	return byTag
}

// kindOf returns the entry of t. IgnoreUnknownTypeFlag only tells a master
// that does not know the type that it may skip it; one that knows the type
// applies it, flag or not.
func kindOf(t Type) (*commandKind, bool) {
	k := kindByTag[t&^IgnoreUnknownTypeFlag]
	return k, k != nil
}

// The apply functions of the table that do more than put or delete by key.
// Each keeps the State's invariants (see Validate) whatever the order of
// commands.

func (s *State) bumpEpoch(Command, func(Key)) { s.Epoch++ }

func (s *State) putApp(c Command, touched func(Key)) {
	r := *c.App
	if putEnding(s, appKind, &s.endedApps, &s.NextAppNumber, &r, c.Retain, touched) && r.Finished() {
		s.dropExecutors(func(e *ExecutorRecord) bool { return e.AppID == r.ID }, touched) // an ended app has none
		endedExecutorsKind.delete(s, r.ID, touched)                                       // its final record lists them
	}
}

func (s *State) deleteApp(c Command, touched func(Key)) {
	deleteEnding(s, appKind, &s.endedApps, c.ID, touched)
	s.dropExecutors(func(e *ExecutorRecord) bool { return e.AppID == c.ID }, touched)
	endedExecutorsKind.delete(s, c.ID, touched)
}

func (s *State) putDriver(c Command, touched func(Key)) {
	r := *c.Driver
	putEnding(s, driverKind, &s.endedDrivers, &s.NextDriverNumber, &r, c.Retain, touched)
}

func (s *State) deleteDriver(c Command, touched func(Key)) {
	deleteEnding(s, driverKind, &s.endedDrivers, c.ID, touched)
}

func (s *State) deleteWorker(c Command, touched func(Key)) {
	workerKind.delete(s, c.ID, touched)
	// Executors are records of where an executor runs: none runs on a
	// worker that is gone.
	s.dropExecutors(func(e *ExecutorRecord) bool { return e.WorkerID == c.ID }, touched)
}

func (s *State) putExecutor(c Command, touched func(Key)) {
	r := *c.Executor
	if app := s.Apps[r.AppID]; app == nil || app.Finished() {
		return // an ended (or unknown) app places nothing more
	}
	if s.Workers[r.WorkerID] == nil {
		// The worker was removed before this placement committed (or never
		// registered): the executor does not run anywhere the state knows.
		return
	}
	executorKind.put(s, &r, touched)
}

// audit appends an entry and drops those past the retention: older than
// the entry's time minus Retain, the oldest beyond MaxAuditEntries, and the
// oldest while the log holds more than MaxAuditBytes. Each text field is
// cut to wire.MaxAuditText first (the leader cuts them already; this holds
// whatever a log entry says), so a caller's megabyte is never stored.
// Entries are kept in the order written, which their times follow but for
// a leader's clock stepping back; the cut goes by that order.
func (s *State) audit(c Command, _ func(Key)) {
	e := BoundAuditEntry(c.Audit.Entry)
	s.auditSize() // counted before the append, for a state loaded whole
	s.Audit = append(s.Audit, e)
	s.AuditCount++
	s.auditBytes += auditEntryBytes(e)
	drop := max(len(s.Audit)-MaxAuditEntries, 0)
	if r := c.Audit.Retain; r > 0 {
		cut := e.Time.Add(-r)
		for drop < len(s.Audit) && s.Audit[drop].Time.Before(cut) {
			drop++
		}
	}
	for i := range drop {
		s.auditBytes -= auditEntryBytes(s.Audit[i])
	}
	for drop < len(s.Audit)-1 && s.auditBytes > MaxAuditBytes {
		s.auditBytes -= auditEntryBytes(s.Audit[drop])
		drop++
	}
	if drop > 0 {
		// Reslice, not copy: at the cap every write drops one entry, and a
		// copy of 100,000 entries per write was most of a busy master's
		// garbage. The dropped head is freed when append next reallocates
		// (amortised O(1)); a clone's Clip keeps it from seeing our appends.
		s.Audit = s.Audit[drop:]
	}
}

// BoundAuditEntry is e with each text field cut to wire.MaxAuditText
// (wire.Clip says how much went).
func BoundAuditEntry(e wire.AuditEntry) wire.AuditEntry {
	for _, f := range []*string{&e.Principal, &e.Tenant, &e.Route, &e.Target, &e.Outcome} {
		*f = wire.Clip(*f, wire.MaxAuditText)
	}
	return e
}

// auditEntryBytes is what an entry counts toward MaxAuditBytes: its text
// and a fixed part for its time, status and the encoding's field names.
func auditEntryBytes(e wire.AuditEntry) int {
	return 96 + len(e.Principal) + len(e.Tenant) + len(e.Route) + len(e.Target) + len(e.Outcome)
}

// auditSize is the bytes the audit log counts toward MaxAuditBytes,
// counted once for a state read whole (a snapshot, bolt) and then kept by
// audit.
func (s *State) auditSize() int {
	if !s.auditCounted {
		s.auditCounted, s.auditBytes = true, 0
		for _, e := range s.Audit {
			s.auditBytes += auditEntryBytes(e)
		}
	}
	return s.auditBytes
}
