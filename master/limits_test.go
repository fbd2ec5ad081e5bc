package master

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/berth-cluster/berth/persistence"
	"github.com/berth-cluster/berth/wire"
)

// wantLimit checks err is the 429 of the cap named by flag.
func wantLimit(t *testing.T, err error, flag string) {
	t.Helper()
	if se := statusErrorOf(err); se.Status != http.StatusTooManyRequests || se.Code != wire.CodeLimitReached || !strings.Contains(se.Message, flag) {
		t.Fatalf("got %v, want a 429 limit_reached naming %s", err, flag)
	}
}

// The active-app cap counts registrations still being written, refuses
// beyond it without writing anything, and makes room as apps end; a
// repeat of a keyed registration is still answered at the cap.
func TestActiveAppsAreCapped(t *testing.T) {
	h := newLeader(t, func(c *Config) { c.MaxActiveApps = 2 })
	first, err := run(h, func(reply reply[wire.Submitted]) {
		h.c.registerApp(wire.AppDescription{Command: []string{"x"}}, keyed{key: "k1", hash: "h1"}, reply)
	})
	if err != nil {
		t.Fatal(err)
	}
	// The second is in flight (not committed) when the third comes.
	var second error = errors.New("no reply")
	h.c.registerApp(wire.AppDescription{Command: []string{"x"}}, keyed{}, func(_ wire.Submitted, err error) { second = err })
	_, third := run(h, func(reply reply[wire.Submitted]) {
		h.c.registerApp(wire.AppDescription{Command: []string{"x"}}, keyed{}, reply)
	})
	if second != nil {
		t.Fatalf("second app: %v", second)
	}
	wantLimit(t, third, "--max-active-apps")
	if n := len(h.fx.state.Apps); n != 2 {
		t.Errorf("%d apps written, want 2", n)
	}
	again, err := run(h, func(reply reply[wire.Submitted]) {
		h.c.registerApp(wire.AppDescription{Command: []string{"x"}}, keyed{key: "k1", hash: "h1"}, reply)
	})
	if err != nil || again.ID != first.ID {
		t.Errorf("keyed repeat at the cap: %v %v", again, err)
	}
	id := first.ID
	if _, err := run(h, func(reply reply[wire.AppStatus]) { h.c.endApp(id, wire.AppKilled, "test", reply) }); err != nil {
		t.Fatal(err)
	}
	if _, err := run(h, func(reply reply[wire.Submitted]) {
		h.c.registerApp(wire.AppDescription{Command: []string{"x"}}, keyed{}, reply)
	}); err != nil {
		t.Errorf("after an app ended: %v", err)
	}
}

// A failed registration gives its place back.
func TestFailedRegistrationFreesItsPlace(t *testing.T) {
	h := newLeader(t, func(c *Config) { c.MaxActiveApps = 1; c.MaxActiveDrivers = 1 })
	var errs []error
	h.c.registerApp(wire.AppDescription{Command: []string{"x"}}, keyed{}, func(_ wire.Submitted, err error) { errs = append(errs, err) })
	h.c.submitDriver(wire.DriverDescription{Command: []string{"x"}}, keyed{}, func(_ wire.Submitted, err error) { errs = append(errs, err) })
	h.failWrites(errors.New("disk on fire"))
	if len(errs) != 2 || errs[0] == nil || errs[1] == nil {
		t.Fatalf("failed writes answered %v", errs)
	}
	if _, err := run(h, func(reply reply[wire.Submitted]) {
		h.c.registerApp(wire.AppDescription{Command: []string{"x"}}, keyed{}, reply)
	}); err != nil {
		t.Errorf("app after a failed one: %v", err)
	}
	if _, err := run(h, func(reply reply[wire.Submitted]) {
		h.c.submitDriver(wire.DriverDescription{Command: []string{"x"}}, keyed{}, reply)
	}); err != nil {
		t.Errorf("driver after a failed one: %v", err)
	}
	_, err := run(h, func(reply reply[wire.Submitted]) {
		h.c.submitDriver(wire.DriverDescription{Command: []string{"x"}}, keyed{}, reply)
	})
	wantLimit(t, err, "--max-active-drivers")
}

// Each app has a bounded number of event streams.
func TestEventStreamsPerAppAreCapped(t *testing.T) {
	h := newLeader(t, func(c *Config) { c.MaxStreamsPerApp = 2 })
	a := h.addApp(wire.AppDescription{})
	s1, _, err1 := h.c.subscribe(a.rec.ID)
	_, _, err2 := h.c.subscribe(a.rec.ID)
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	_, _, err := h.c.subscribe(a.rec.ID)
	wantLimit(t, err, "--max-streams-per-app")
	h.c.unsubscribe(a.rec.ID, s1)
	if _, _, err := h.c.subscribe(a.rec.ID); err != nil {
		t.Errorf("after one closed: %v", err)
	}
}

// A completed app or driver keeps no environment, in memory or durably;
// a supervised driver's relaunch still gets its environment.
func TestCompletedRecordsKeepNoEnvironment(t *testing.T) {
	h := newLeader(t, nil)
	env := map[string]string{"TOKEN": "s3cret"}
	a := h.addApp(wire.AppDescription{Env: env})
	if _, err := run(h, func(reply reply[wire.AppStatus]) { h.c.endApp(a.rec.ID, wire.AppFinished, "done", reply) }); err != nil {
		t.Fatal(err)
	}
	if a.rec.Desc.Env != nil || h.fx.state.Apps[a.rec.ID].Desc.Env != nil {
		t.Errorf("completed app keeps its environment: %v / %v", a.rec.Desc.Env, h.fx.state.Apps[a.rec.ID].Desc.Env)
	}
	id := h.addDriver(wire.DriverDescription{Command: []string{"x"}, Env: env})
	if _, err := run(h, func(reply reply[wire.DriverStatus]) { h.c.killDriver(id, reply) }); err != nil {
		t.Fatal(err)
	}
	if rec := h.fx.state.Drivers[id]; rec == nil || !rec.State.Finished() || rec.Desc.Env != nil {
		t.Errorf("killed driver's record: %+v", rec)
	}
}

// Through HTTP: a submission over the size cap is a 429 naming the flag
// and writes nothing; one under it passes.
func TestSubmissionSizeIsCapped(t *testing.T) {
	engine := persistence.NewMemory()
	_, base := runMaster(t, Config{WorkerTimeout: time.Minute, MaxSubmissionBytes: 1000}, engine, nil)
	post := func(path string, body any) (int, wire.Error) {
		t.Helper()
		data, _ := json.Marshal(body)
		var out wire.Error
		for deadline := time.Now().Add(10 * time.Second); ; {
			resp, err := http.Post(base+path, "application/json", bytes.NewReader(data))
			if err != nil {
				t.Fatal(err)
			}
			json.NewDecoder(resp.Body).Decode(&out)
			resp.Body.Close()
			if resp.StatusCode != http.StatusServiceUnavailable || time.Now().After(deadline) {
				return resp.StatusCode, out
			}
			time.Sleep(10 * time.Millisecond) // polling with a deadline: the master is electing itself
		}
	}
	big := map[string]string{"BULK": strings.Repeat("x", 1000)}
	for name, c := range map[string]struct {
		path string
		body any
	}{
		"app env":     {wire.MasterAPI.RegisterApp.Path(), wire.AppDescription{Command: []string{"x"}, Env: big}},
		"app argv":    {wire.MasterAPI.RegisterApp.Path(), wire.AppDescription{Command: []string{"x", strings.Repeat("y", 1000)}}},
		"driver env":  {wire.MasterAPI.SubmitDriver.Path(), wire.DriverDescription{Command: []string{"x"}, Env: big}},
		"driver argv": {wire.MasterAPI.SubmitDriver.Path(), wire.DriverDescription{Command: []string{strings.Repeat("y", 1000)}}},
		// A check's command is a process's argv too (it got past the cap).
		"app check": {wire.MasterAPI.RegisterApp.Path(), wire.AppDescription{
			Command:     []string{"x"},
			ProcessSpec: wire.ProcessSpec{Checks: []wire.Check{{Name: "c", Type: wire.CheckExec, Command: []string{"x", strings.Repeat("y", 1000)}}}},
		}},
		"driver check": {wire.MasterAPI.SubmitDriver.Path(), wire.DriverDescription{
			Command:     []string{"x"},
			ProcessSpec: wire.ProcessSpec{Checks: []wire.Check{{Name: "c", Type: wire.CheckExec, Command: []string{"x", strings.Repeat("y", 1000)}}}},
		}},
	} {
		status, e := post(c.path, c.body)
		if status != http.StatusTooManyRequests || e.Code != wire.CodeLimitReached || !strings.Contains(e.Error, "--max-submission-bytes") {
			t.Errorf("%s: %d %+v", name, status, e)
		}
	}
	st, err := engine.Load(t.Context())
	if err != nil || len(st.Apps)+len(st.Drivers) != 0 {
		t.Errorf("refused submissions were written: %d apps, %d drivers (%v)", len(st.Apps), len(st.Drivers), err)
	}
	if status, e := post(wire.MasterAPI.RegisterApp.Path(), wire.AppDescription{Command: []string{"x"}, Env: map[string]string{"A": strings.Repeat("x", 900)}}); status != http.StatusOK {
		t.Errorf("a submission under the cap: %d %+v", status, e)
	}
}
