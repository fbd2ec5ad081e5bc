package e2e

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/berth-cluster/berth/wire"
)

// TestADriversNameIsShownWhereItsIDIs: drivers had no name (berth submit
// --name was refused; status and the UI listed them by id only). A name
// given at submission is stored, shown by berth status (text and JSON)
// and in the web UI's drivers table; a name a terminal would act on is
// refused, naming the field, and nothing is submitted.
func TestADriversNameIsShownWhereItsIDIs(t *testing.T) {
	t.Parallel()
	cl := startCluster(t, clusterSpec{masters: 3, workers: []string{"w1"}, cores: 2, memory: "1g"})
	r := cl.cli("submit", "--name", "nightly-etl", "--cores", "1", "--memory", "64m", "--", "/bin/sleep", "600", cl.marker)
	if r.code != 0 {
		t.Fatalf("berth submit --name: %s", r)
	}
	var st wire.ClusterStatus
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) { // polling with a deadline
		if j := cl.cli("status", "--json"); j.code == 0 && json.Unmarshal([]byte(j.stdout), &st) == nil &&
			len(st.ActiveDrivers) == 1 && st.ActiveDrivers[0].State == wire.DriverRunning {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no running driver: %+v", st.ActiveDrivers)
		}
	}
	if d := st.ActiveDrivers[0]; d.Name != "nightly-etl" {
		t.Errorf("status --json: driver %s named %q, want nightly-etl", d.ID, d.Name)
	}
	if text := cl.cli("status"); !strings.Contains(text.stdout, "nightly-etl") {
		t.Errorf("berth status does not name the driver:\n%s", text.stdout)
	}
	b := newBrowser(t)
	leader := cl.master(st.MasterID)
	b.signIn(leader.URL)
	b.until(leader.URL+"/ui/", "the drivers table naming the driver", 10*time.Second, func(s string) error {
		return wantText(s, st.ActiveDrivers[0].ID, "nightly-etl")
	})

	bad := cl.cli("submit", "--name", "evil\x1b]0;title\x07", "--cores", "1", "--memory", "64m", "--", "/bin/true")
	if bad.code == 0 || !strings.Contains(bad.stderr, "name") {
		t.Errorf("a name with control characters: %s; want it refused, naming the name", bad)
	}
	if j := cl.cli("status", "--json"); json.Unmarshal([]byte(j.stdout), &st) != nil || len(st.ActiveDrivers)+len(st.CompletedDrivers) != 1 {
		t.Errorf("the refused submission made a driver: %+v %+v", st.ActiveDrivers, st.CompletedDrivers)
	}
}
