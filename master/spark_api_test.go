package master

import (
	"strings"
	"testing"
	"time"

	"github.com/berth-cluster/berth/admission"
	"github.com/berth-cluster/berth/wire"
)

// What a cluster-manager plugin (Spark's) reads of an executor: who its
// failure is owed to, its host, when its worker's drain ends; of an app,
// its own UI; and, at a limit of 0, that no executor could ever start.
func TestWhatAPluginReadsOfItsExecutors(t *testing.T) {
	h := newLeader(t, nil, "w1")
	desc := oneCoreApp("default", 0)
	desc.MaxCores, desc.UIURL = 2, "http://10.0.0.5:4040"
	a := h.addApp(desc)
	h.commit()
	es := sortedExecutors(a.executors)
	h.reportCaused(es[0], wire.ExecutorFailed, intp(137), wire.CauseSignal)
	st := mustAppStatus(t, h, a.rec.ID)
	if st.UIURL != "http://10.0.0.5:4040" {
		t.Errorf("uiUrl %q", st.UIURL)
	}
	var failed *wire.ExecutorStatus
	for i, e := range st.Executors {
		if e.ID == es[0].id {
			failed = &st.Executors[i]
		}
	}
	for _, ev := range a.recent {
		if ev.Executor != nil && ev.Executor.ID == es[0].id && ev.Executor.State == wire.ExecutorFailed {
			failed = ev.Executor
		}
	}
	if failed == nil || failed.Cause != wire.CauseSignal || failed.Host == "" {
		t.Errorf("the failed executor as its client hears it: %+v, want cause signal and its host", failed)
	}

	// A drain: each executor there is told, with the deadline.
	var drained wire.WorkerStatus
	h.c.drainWorker("w1", time.Minute, func(st wire.WorkerStatus, err error) { drained = st })
	h.commit()
	n := 0
	for _, ev := range a.recent {
		if ev.Type == wire.EventExecutorDraining && ev.Executor != nil && ev.Executor.DrainDeadline != nil && strings.Contains(ev.Message, "being drained") {
			n++
		}
	}
	if drained.State != wire.WorkerDecommissioning || n != len(a.executors) || n == 0 {
		t.Errorf("draining w1 (%s): %d executorDraining events for %d executors", drained.State, n, len(a.executors))
	}
}

func TestAnAppAtLimitZeroLearnsItCouldNeverStart(t *testing.T) {
	h := newLeader(t, nil, "w1") // 4 cores, 8 GB (newLeader's workers)
	zero := 0
	desc := oneCoreApp("default", 0)
	desc.InitialExecutorLimit, desc.MemoryPerExecutorMB = &zero, 1<<20
	a := h.addApp(desc)
	if st := mustAppStatus(t, h, a.rec.ID); !strings.HasPrefix(st.Waiting, "cannot start:") {
		t.Errorf("an app at limit 0 whose executors fit no worker: waiting %q, want cannot start", st.Waiting)
	}
}

func TestAnAppsUIMustBeAWebAddress(t *testing.T) {
	for _, bad := range []string{"javascript:alert(1)", "file:///etc/passwd", "http://", "http://u:p@h/", "http://h/\x1b[2J", "http://h/" + strings.Repeat("a", wire.MaxUIURLBytes)} {
		if err := admission.App(wire.AppDescription{Command: []string{"x"}, UIURL: bad}); err == nil || !strings.Contains(err.Error(), "uiUrl") {
			t.Errorf("uiUrl %.40q: %v, want it refused naming the field", bad, err)
		}
	}
	if err := admission.App(wire.AppDescription{Command: []string{"x"}, UIURL: "https://driver.example:4040/jobs/"}); err != nil {
		t.Errorf("a driver's UI: %v", err)
	}
}

// An executor placed while its worker's drain was being written (its
// placement's write came after the drain's, so the drain's apply found it
// not yet launched) is told too, once it is launched: else it would run
// to the deadline and end LOST instead of being decommissioned.
func TestAnExecutorPlacedAsItsWorkerDrainsIsToldSo(t *testing.T) {
	h := newLeader(t, nil, "w1")
	desc := oneCoreApp("default", 0)
	desc.MaxCores = 2
	var id string
	h.c.registerApp(desc, keyed{}, func(s wire.Submitted, err error) { id = s.ID })
	for id == "" && len(h.fx.pending) > 0 { // the registration's writes only
		p := h.fx.pending[0]
		h.fx.pending = h.fx.pending[1:]
		for _, c := range p.cmds {
			if err := h.fx.state.Apply(c, nil); err != nil {
				t.Fatal(err)
			}
		}
		p.then(nil)
	}
	a := h.c.apps[id]
	// The drain is being written; meanwhile w1, not yet draining, gets
	// the app's executors, whose placements are written after it.
	h.c.drainWorker("w1", time.Minute, func(wire.WorkerStatus, error) {})
	h.c.runSchedule()
	if a == nil || len(a.executors) == 0 || len(h.fx.pending) < 2 {
		t.Fatalf("want the drain and placements being written: %v, %d writes pending", a, len(h.fx.pending))
	}
	h.commit()
	told := map[int]bool{}
	for _, ev := range a.recent {
		if ev.Type == wire.EventExecutorDraining && ev.Executor != nil && ev.Executor.DrainDeadline != nil {
			told[ev.Executor.ID] = true
		}
	}
	for id := range a.executors {
		if !told[id] {
			t.Errorf("executor %d, placed as w1 was drained, heard no executorDraining (told: %v)", id, told)
		}
	}
}
