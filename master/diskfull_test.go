package master

import (
	"net/http"
	"strings"
	"testing"

	"github.com/berth-cluster/berth/wire"
)

// A worker whose heartbeat says its disk is full gets nothing new, says
// so in status, and keeps what it runs; a waiting app says why; once a
// heartbeat comes without it, placement resumes there.
func TestAWorkerWithAFullDiskGetsNothingNew(t *testing.T) {
	h := newLeader(t, nil)
	h.addWorker("w1", 4, 4096)
	first := oneCoreApp("default", 0)
	first.MaxCores = 1
	running := h.addApp(first)
	h.running(running)
	const why = "work dir /var/lib/berth: 12 MiB free, below --min-free-disk 64 MiB"
	if _, err := h.c.heartbeat("w1", wire.Heartbeat{DiskFull: why}); err != nil {
		t.Fatal(err)
	}
	next := h.addApp(oneCoreApp("default", 0))
	if len(next.executors) != 0 {
		t.Fatalf("an app got %d executors on a worker whose disk is full", len(next.executors))
	}
	st := h.statusOf()
	if len(st.Workers) != 1 || st.Workers[0].DiskFull != why || st.Workers[0].State != wire.WorkerAlive {
		t.Errorf("status of the worker: %+v; want ALIVE with diskFull %q", st.Workers, why)
	}
	if w := mustAppStatus(t, h, next.rec.ID).Waiting; !strings.Contains(w, "disk of every live worker is full") {
		t.Errorf("the waiting app says %q", w)
	}
	if len(running.executors) != 1 {
		t.Errorf("the running app lost its executor: %d", len(running.executors))
	}

	if _, err := h.c.heartbeat("w1", wire.Heartbeat{}); err != nil {
		t.Fatal(err)
	}
	h.c.runSchedule() // as the loop does after each event
	h.commit()
	if len(next.executors) != 3 {
		t.Errorf("after space returned the app got %d executors, want the 3 free cores", len(next.executors))
	}
	if st := h.statusOf(); st.Workers[0].DiskFull != "" {
		t.Errorf("diskFull still %q after a heartbeat without it", st.Workers[0].DiskFull)
	}
}

// The worker's words are shown to operators: bounded, no control
// characters.
func TestHeartbeatDiskFullValidated(t *testing.T) {
	for _, bad := range []string{strings.Repeat("x", wire.MaxDiskFullLen+1), "full\x1b[2J", "full\u202e"} {
		if err := validateHeartbeat(wire.Heartbeat{DiskFull: bad}); statusOf(err) != http.StatusBadRequest {
			t.Errorf("diskFull %q: %v, want a 400", bad, err)
		}
	}
	if err := validateHeartbeat(wire.Heartbeat{DiskFull: "work dir /w: 1 MiB free"}); err != nil {
		t.Error(err)
	}
}
