package worker

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/berth-cluster/berth/internal/httpx"
	"github.com/berth-cluster/berth/testkit/testproc"
	"github.com/berth-cluster/berth/wire"
)

// fakeMaster implements the worker-facing master API and records the calls.
// Its hooks, set before or during a test under mu, change its answers.
type fakeMaster struct {
	srv *httptest.Server

	mu            sync.Mutex
	epoch         uint64
	intervalMs    int64
	registrations []wire.RegisterWorker
	states        []wire.WorkerLatestState
	heartbeats    []time.Time
	lastBeat      wire.Heartbeat
	execStates    []wire.ExecutorStateChanged
	driverStates  []wire.DriverStateChanged
	drains        []wire.DrainRequest
	calls         []string // "register", "state", "heartbeat", "executor-state", "driver-state", "decommission", "leave"

	// onRegister, if set, may answer a registration (n counts from 1)
	// with an error instead of accepting it.
	onRegister func(n int) error
	// onHeartbeat, if set, may answer a heartbeat with an error, or
	// reconnect=true.
	onHeartbeat func() (reconnect bool, err error)
	// onExecState, if set, may refuse an executor state report.
	onExecState func(wire.ExecutorStateChanged) error
	// onState, if set, may refuse a latest state.
	onState func() error
	// beatIntervalMs, if set, is the interval heartbeat replies ask for.
	beatIntervalMs int64
}

func newFakeMaster(t testing.TB) *fakeMaster {
	fm := &fakeMaster{epoch: 5, intervalMs: 100}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/workers", answer(fm, "register", func(req wire.RegisterWorker) (any, error) {
		fm.registrations = append(fm.registrations, req)
		if fm.onRegister != nil {
			if err := fm.onRegister(len(fm.registrations)); err != nil {
				return nil, err
			}
		}
		return wire.RegisteredWorker{MasterID: "fake", Epoch: fm.epoch,
			Duplicate: len(fm.registrations) > 1, HeartbeatIntervalMs: fm.intervalMs}, nil
	}))
	mux.HandleFunc("POST /v1/workers/{id}/state", answer(fm, "state", func(req wire.WorkerLatestState) (any, error) {
		if fm.onState != nil {
			if err := fm.onState(); err != nil {
				return nil, err
			}
		}
		fm.states = append(fm.states, req)
		return wire.LatestStateReply{}, nil
	}))
	mux.HandleFunc("POST /v1/workers/{id}/heartbeat", answer(fm, "heartbeat", func(req wire.Heartbeat) (any, error) {
		reconnect := false
		if fm.onHeartbeat != nil {
			var err error
			if reconnect, err = fm.onHeartbeat(); err != nil {
				return nil, err
			}
		}
		fm.heartbeats = append(fm.heartbeats, time.Now())
		fm.lastBeat = req
		return wire.HeartbeatReply{Epoch: fm.epoch, Reconnect: reconnect, HeartbeatIntervalMs: fm.beatIntervalMs}, nil
	}))
	mux.HandleFunc("POST /v1/workers/{id}/executor-state", answer(fm, "executor-state", func(req wire.ExecutorStateChanged) (any, error) {
		if fm.onExecState != nil {
			if err := fm.onExecState(req); err != nil {
				return nil, err
			}
		}
		fm.execStates = append(fm.execStates, req)
		return struct{}{}, nil
	}))
	mux.HandleFunc("POST /v1/workers/{id}/driver-state", answer(fm, "driver-state", func(req wire.DriverStateChanged) (any, error) {
		fm.driverStates = append(fm.driverStates, req)
		return struct{}{}, nil
	}))
	mux.HandleFunc("POST /v1/workers/{id}/drain", answer(fm, "drain", func(req wire.DrainRequest) (any, error) {
		fm.drains = append(fm.drains, req)
		return wire.WorkerStatus{State: wire.WorkerDecommissioning}, nil
	}))
	for _, notice := range []string{"decommission", "leave"} { // no body
		mux.HandleFunc("POST /v1/workers/{id}/"+notice, func(w http.ResponseWriter, r *http.Request) {
			fm.with(func() { fm.calls = append(fm.calls, notice) })
			httpx.WriteJSON(w, 200, struct{}{})
		})
	}
	fm.srv = httptest.NewServer(httpx.RequireSecret(testSecret, mux)) // listens on 127.0.0.1
	t.Cleanup(fm.srv.Close)
	return fm
}

// answer serves one kind of call with a body: it decodes the request as
// the master would, then, under the master's lock, logs the call and lets
// reply record it (or refuse it, through a hook) and answer it.
func answer[Req any](fm *fakeMaster, call string, reply func(Req) (any, error)) http.HandlerFunc {
	return testproc.HandleJSON(func(_ *http.Request, req Req) (any, error) {
		fm.mu.Lock()
		defer fm.mu.Unlock()
		fm.calls = append(fm.calls, call)
		return reply(req)
	})
}

func (fm *fakeMaster) URL() string { return fm.srv.URL }

// with runs f under the master's lock.
func (fm *fakeMaster) with(f func()) {
	fm.mu.Lock()
	defer fm.mu.Unlock()
	f()
}

func (fm *fakeMaster) count(call string) int {
	fm.mu.Lock()
	defer fm.mu.Unlock()
	n := 0
	for _, c := range fm.calls {
		if c == call {
			n++
		}
	}
	return n
}

// execReports returns the states reported for one executor, in order.
func (fm *fakeMaster) execReports(appID string, execID int) []wire.ExecutorStateChanged {
	fm.mu.Lock()
	defer fm.mu.Unlock()
	var out []wire.ExecutorStateChanged
	for _, s := range fm.execStates {
		if s.AppID == appID && s.ExecutorID == execID {
			out = append(out, s)
		}
	}
	return out
}

func (fm *fakeMaster) driverReports(id string) []wire.DriverStateChanged {
	fm.mu.Lock()
	defer fm.mu.Unlock()
	var out []wire.DriverStateChanged
	for _, s := range fm.driverStates {
		if s.DriverID == id {
			out = append(out, s)
		}
	}
	return out
}

// waitFinal waits for an executor's final report and returns all its reports.
func (fm *fakeMaster) waitFinal(t *testing.T, appID string, execID int) []wire.ExecutorStateChanged {
	t.Helper()
	var reps []wire.ExecutorStateChanged
	testproc.Eventually(t, 15*time.Second, "final state of executor "+appID, func() bool {
		reps = fm.execReports(appID, execID)
		return len(reps) > 0 && reps[len(reps)-1].State.Finished()
	})
	return reps
}

func (fm *fakeMaster) waitDriverFinal(t *testing.T, id string) []wire.DriverStateChanged {
	t.Helper()
	var reps []wire.DriverStateChanged
	testproc.Eventually(t, 15*time.Second, "final state of driver "+id, func() bool {
		reps = fm.driverReports(id)
		return len(reps) > 0 && reps[len(reps)-1].State.Finished() && reps[len(reps)-1].State != wire.DriverRelaunching
	})
	return reps
}

// lastState is the latest WorkerLatestState received.
func (fm *fakeMaster) lastState() (wire.WorkerLatestState, bool) {
	fm.mu.Lock()
	defer fm.mu.Unlock()
	if len(fm.states) == 0 {
		return wire.WorkerLatestState{}, false
	}
	return fm.states[len(fm.states)-1], true
}

func (fm *fakeMaster) callLog() []string {
	fm.mu.Lock()
	defer fm.mu.Unlock()
	return slices.Clone(fm.calls)
}

// waitRegistered waits until the worker has registered and sent its state.
func (fm *fakeMaster) waitRegistered(t testing.TB) {
	t.Helper()
	testproc.Eventually(t, 10*time.Second, "registration and latest state", func() bool { return fm.count("state") > 0 })
}

func states[S any](reps []S, state func(S) string) []string {
	out := make([]string, len(reps))
	for i, r := range reps {
		out[i] = state(r)
	}
	return out
}

func execStateNames(reps []wire.ExecutorStateChanged) []string {
	return states(reps, func(r wire.ExecutorStateChanged) string { return string(r.State) })
}

func driverStateNames(reps []wire.DriverStateChanged) []string {
	return states(reps, func(r wire.DriverStateChanged) string { return string(r.State) })
}
