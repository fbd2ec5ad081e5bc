package master

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/berth-cluster/berth/admission"
	"github.com/berth-cluster/berth/wire"
)

// stopAfterDisconnect is 0 or from a second to a week; the launches of
// an app and a driver that set it carry it to their workers.
func TestStopAfterDisconnectCarriedToTheWorker(t *testing.T) {
	for _, c := range []struct {
		d  time.Duration
		ok bool
	}{{0, true}, {time.Second, true}, {90 * time.Second, true}, {wire.MaxStopAfterDisconnect, true},
		{500 * time.Millisecond, false}, {-time.Minute, false}, {wire.MaxStopAfterDisconnect + time.Second, false}} {
		app := wire.AppDescription{Command: []string{"x"}, ProcessSpec: wire.ProcessSpec{StopAfterDisconnect: wire.Duration(c.d)}}
		drv := wire.DriverDescription{Command: []string{"x"}, ProcessSpec: wire.ProcessSpec{StopAfterDisconnect: wire.Duration(c.d)}}
		for what, err := range map[string]error{"app": admission.App(app), "driver": admission.Driver(drv)} {
			if c.ok != (err == nil) || err != nil && (statusOf(err) != http.StatusBadRequest || !strings.Contains(err.Error(), "stopAfterDisconnect")) {
				t.Errorf("%s stopAfterDisconnect %s: %v", what, c.d, err)
			}
		}
	}

	h := newLeader(t, nil, "w1")
	desc := oneCoreApp("default", 0)
	desc.MaxCores, desc.StopAfterDisconnect = 1, wire.Duration(90*time.Second)
	h.addApp(desc)
	h.addDriver(wire.DriverDescription{Command: []string{"d"}, Cores: 1, MemoryMB: 64, ProcessSpec: wire.ProcessSpec{StopAfterDisconnect: wire.Duration(2 * time.Minute)}})
	h.commit()
	launches := h.takeSent(wire.WorkerAPI.LaunchExecutor.Pattern)
	if len(launches) != 1 || launches[0].cmd.body.(wire.LaunchExecutor).StopAfterDisconnect.D() != 90*time.Second {
		t.Errorf("executor launches %+v, want one carrying stopAfterDisconnect 1m30s", launches)
	}
	drivers := h.takeSent(wire.WorkerAPI.LaunchDriver.Pattern)
	if len(drivers) != 1 || drivers[0].cmd.body.(wire.LaunchDriver).StopAfterDisconnect.D() != 2*time.Minute {
		t.Errorf("driver launches %+v, want one carrying stopAfterDisconnect 2m0s", drivers)
	}
}

// In JSON it is a duration string: a bare number is refused with a 400
// that says what is wanted.
func TestStopAfterDisconnectIsADurationString(t *testing.T) {
	_, base := runMaster(t, Config{WorkerTimeout: time.Minute}, nil, nil)
	for body, want := range map[string]string{
		`{"command":["x"],"stopAfterDisconnect":90}`:     "want a duration as a string",
		`{"command":["x"],"stopAfterDisconnect":"soon"}`: "want a duration such as",
	} {
		resp, err := http.Post(base+wire.MasterAPI.RegisterApp.Path(), "application/json", bytes.NewReader([]byte(body)))
		if err != nil {
			t.Fatal(err)
		}
		var e wire.Error
		json.NewDecoder(resp.Body).Decode(&e)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(e.Error, want) {
			t.Errorf("%s: %d %+v, want 400 saying %q", body, resp.StatusCode, e, want)
		}
	}
}

// A driver its worker stopped out of touch ends as if the worker were
// lost: supervised, it is relaunched under a new id; otherwise it ends in
// ERROR. Either way the end is acknowledged once durable, and the same
// holds when the end arrives in a latest state.
func TestADriverStoppedOutOfTouchIsRelaunched(t *testing.T) {
	for _, viaState := range []bool{false, true} {
		for _, supervise := range []bool{true, false} {
			h := newLeader(t, nil)
			h.addWorker("w1", 4, 4096)
			v, err := run(h, func(reply reply[wire.Submitted]) {
				h.c.submitDriver(wire.DriverDescription{
					Command:     []string{"d"},
					Cores:       1,
					MemoryMB:    256,
					Supervise:   supervise,
					ProcessSpec: wire.ProcessSpec{StopAfterDisconnect: wire.Duration(time.Minute)},
				}, keyed{}, reply)
			})
			if err != nil {
				t.Fatal(err)
			}
			h.commit()
			const msg = "stopped: out of touch with every master for 1m0s (stopAfterDisconnect 1m0s): exited"
			if viaState {
				if _, err := h.c.workerLatestState("w1", wire.WorkerLatestState{WorkerID: "w1",
					Drivers: []wire.DriverReport{{DriverID: v.ID, State: wire.DriverKilled, Message: msg, OutOfTouch: true}}}); err != nil {
					t.Fatal(err)
				}
			} else {
				acked := false
				h.c.driverStateChanged("w1", wire.DriverStateChanged{DriverID: v.ID, State: wire.DriverKilled, Message: msg, OutOfTouch: true},
					func(_ wire.None, err error) { acked = err == nil })
				if acked {
					t.Fatal("the end was acknowledged before it was durable")
				}
				defer func() {
					if !acked {
						t.Error("the end was never acknowledged")
					}
				}()
			}
			h.commit()
			d := h.c.completedDriver(v.ID)
			want := wire.DriverError
			if supervise {
				want = wire.DriverRelaunching
			}
			if d == nil || d.state != want || !strings.Contains(d.message, "stopped: out of touch") {
				t.Fatalf("supervise %v, latest state %v: the driver ended %+v, want %s saying why", supervise, viaState, d, want)
			}
			if supervise != (len(h.c.drivers) == 1) {
				t.Errorf("supervise %v: %d drivers active after the stop", supervise, len(h.c.drivers))
			}
		}
	}
}
