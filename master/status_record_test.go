package master

import (
	"reflect"
	"testing"

	"github.com/berth-cluster/berth/persistence"
	"github.com/berth-cluster/berth/wire"
)

// A follower shows an app and a driver from their records: every field
// of the description the leader shows is there too (a follower's view
// dropped the app's Spark UI link, its command, ports, checks, restart
// policy, constraints and gang, and a driver's constraints).
func TestRecordStatusShowsWhatTheLeaderShows(t *testing.T) {
	on := []wire.Constraint{{Label: "zone", In: []string{"z1"}}}
	spec := wire.ProcessSpec{Queue: "etl", Priority: 3, Ports: []string{"http"}, Constraints: on,
		Checks: []wire.Check{{Name: "up", Port: "http"}}, Restart: &wire.RestartPolicy{Mode: wire.RestartMode("delay")}}
	app := &persistence.AppRecord{ID: "app-1", Tenant: "acme", Desc: wire.AppDescription{Name: "a", Command: []string{"x", "y"},
		MaxCores: 8, CoresPerExecutor: 2, MemoryPerExecutorMB: 512, Gang: 4, GangRestart: true, UIURL: "http://10.0.0.9:4040", Detached: true, ProcessSpec: spec}}
	st := recordAppStatus(app)
	want := wire.AppStatus{Ports: spec.Ports, Checks: spec.Checks, Restart: spec.Restart, Constraints: on, Gang: 4, GangRestart: true,
		UIURL: "http://10.0.0.9:4040", Command: []string{"x", "y"}, Detached: true, Queue: "etl", Priority: 3, Tenant: "acme"}
	got := wire.AppStatus{Ports: st.Ports, Checks: st.Checks, Restart: st.Restart, Constraints: st.Constraints, Gang: st.Gang, GangRestart: st.GangRestart,
		UIURL: st.UIURL, Command: st.Command, Detached: st.Detached, Queue: st.Queue, Priority: st.Priority, Tenant: st.Tenant}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("an app's record shows %+v, want %+v", got, want)
	}
	d := recordDriverStatus(&persistence.DriverRecord{ID: "driver-1", Desc: wire.DriverDescription{Command: []string{"x"}, ProcessSpec: spec}})
	if !reflect.DeepEqual(d.Constraints, on) || d.Queue != "etl" || d.Priority != 3 {
		t.Errorf("a driver's record shows constraints %v, queue %q, priority %d", d.Constraints, d.Queue, d.Priority)
	}
}
