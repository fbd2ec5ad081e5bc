package persistence

import (
	"strings"
	"testing"
	"time"

	"github.com/berth-cluster/berth/wire"
)

// A refused request's target is whatever the caller put in the path: a
// megabyte of it used to be stored whole in every master's log (200 of
// them took each master from 50 MB to 500 MB). Applied entries keep at
// most wire.MaxAuditText a field, and the log at most MaxAuditBytes.
func TestAuditEntriesAndTheLogAreBoundedInBytes(t *testing.T) {
	s := NewState()
	huge := strings.Repeat("a", 1<<20)
	e := wire.AuditEntry{Time: t0, Principal: "tenant:" + huge, Tenant: huge, Route: "DELETE /v1/queues/{id}", Target: huge, Outcome: huge, Status: 404}
	if err := s.Apply(Audit(AuditRecord{Entry: e}), nil); err != nil {
		t.Fatal(err)
	}
	got := s.Audit[0]
	for name, f := range map[string]string{"principal": got.Principal, "tenant": got.Tenant, "target": got.Target, "outcome": got.Outcome} {
		if len(f) > wire.MaxAuditText+32 || !strings.Contains(f, "bytes cut") {
			t.Errorf("%s kept %d bytes (%.40q...), want at most %d and the cut said", name, len(f), f, wire.MaxAuditText)
		}
	}
	if got.Route != e.Route || got.Status != 404 {
		t.Errorf("route %q status %d: changed", got.Route, got.Status)
	}

	// Entries as large as a field allows: the bytes bound the log before
	// the count does, and the count of entries ever written goes on.
	n := MaxAuditBytes/auditEntryBytes(got) + 1000
	for i := range n {
		e.Time = t0.Add(time.Duration(i) * time.Millisecond)
		if err := s.Apply(Audit(AuditRecord{Entry: e}), nil); err != nil {
			t.Fatal(err)
		}
	}
	if s.auditSize() > MaxAuditBytes {
		t.Errorf("the log counts %d bytes, over %d", s.auditSize(), MaxAuditBytes)
	}
	if len(s.Audit) >= n || len(s.Audit) < n-2000 {
		t.Errorf("%d entries kept of %d written: want the oldest dropped for bytes", len(s.Audit), n+1)
	}
	if s.AuditCount != uint64(n+1) || s.Audit[len(s.Audit)-1].Time != e.Time {
		t.Errorf("count %d, newest %v: want %d and the last written", s.AuditCount, s.Audit[len(s.Audit)-1].Time, n+1)
	}
	// A state read whole (a snapshot, a restart) counts its log again.
	c := &State{Audit: s.Audit, AuditCount: s.AuditCount}
	if c.auditSize() != s.auditSize() {
		t.Errorf("recounted %d bytes, kept %d", c.auditSize(), s.auditSize())
	}
}
