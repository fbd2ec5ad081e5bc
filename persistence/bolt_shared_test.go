package persistence

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/berth-cluster/berth/wire"
)

// A lone master's file keeps the shared cluster's records across a
// restart: queues, tenants, ended sessions and the audit log, retention
// and deletions included.
func TestBoltKeepsQueuesTenantsSessionsAndAudit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	b, err := OpenBolt(path)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	entry := func(m int) Command {
		return Audit(AuditRecord{Entry: wire.AuditEntry{Time: at.Add(time.Duration(m) * time.Minute), Principal: "secret", Route: "PUT /v1/queues/{id}", Outcome: "ok"}, Retain: time.Hour})
	}
	cmds := []Command{
		PutQueue(QueueRecord{Name: "etl", Weight: 2, Guarantee: wire.Amount{Cores: 8}, Preempt: true}),
		PutQueue(QueueRecord{Name: "old", Weight: 1}),
		DeleteQueue("old"),
		PutTenant(TenantRecord{Name: "team-a", Queues: []string{"etl"}, TokenHash: "abc", CreatedAt: at}),
		EndSession(EndedSession{ID: "s1", Expires: at.Unix() + 3600, At: at.Unix()}),
		entry(0), entry(30), entry(61), // the first is past the hour by the third
	}
	for _, c := range cmds {
		if err := b.Write(context.Background(), []Command{c}); err != nil {
			t.Fatal(err)
		}
	}
	want, _ := b.Load(context.Background())
	if len(want.Audit) != 2 || want.AuditCount != 3 || len(want.Queues) != 1 {
		t.Fatalf("before the restart: %d audit entries of %d, %d queues", len(want.Audit), want.AuditCount, len(want.Queues))
	}
	b.Close()
	b, err = OpenBolt(path)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	got, _ := b.Load(context.Background())
	if !got.Equal(want) {
		t.Errorf("after a restart:\n got %+v\nwant %+v", got, want)
	}
}
