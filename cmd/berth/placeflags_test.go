package main

import (
	"reflect"
	"testing"

	"github.com/berth-cluster/berth/testkit/testproc"
	"github.com/berth-cluster/berth/wire"
)

// --constraint (a comma-separated list kept whole, repeatable), --gang and
// --gang-restart, as berth run and berth submit send them.
func TestConstraintAndGangFlags(t *testing.T) {
	f := newSharedMaster(t, testSecret)
	res := berth(t, f.env(), "run", "--constraint", "gpu-model=T4,P100", "--constraint", "zone!=b", "--cores-per-executor", "2",
		"--gang", "4", "--gang-restart", "--", "/opt/train")
	if res.Code != 0 {
		t.Fatalf("run: %+v", res)
	}
	app := sent[wire.AppDescription](t, f, "/v1/apps")
	want := []wire.Constraint{{Label: "gpu-model", In: []string{"T4", "P100"}}, {Label: "zone", NotIn: []string{"b"}}}
	if !reflect.DeepEqual(app.Constraints, want) || app.Gang != 4 || !app.GangRestart {
		t.Errorf("run sent constraints %+v gang %d restart %v", app.Constraints, app.Gang, app.GangRestart)
	}

	f = newSharedMaster(t, testSecret)
	res = berth(t, f.env(), "submit", "--constraint", "gpu-model=A100", "--", "/opt/drv")
	if res.Code != 0 {
		t.Fatalf("submit: %+v", res)
	}
	drv := sent[wire.DriverDescription](t, f, "/v1/drivers")
	if !reflect.DeepEqual(drv.Constraints, []wire.Constraint{{Label: "gpu-model", In: []string{"A100"}}}) {
		t.Errorf("submit sent constraints %+v", drv.Constraints)
	}
}

func TestBadConstraintAndGangNameTheFlag(t *testing.T) {
	f := newSharedMaster(t, testSecret)
	cases := []testproc.BadFlag{
		{Args: []string{"run", "--constraint", "gpu-model", "--", "x"}, Flag: "--constraint"},
		{Args: []string{"run", "--constraint", "gpu model=T4", "--", "x"}, Flag: "--constraint"},
		{Args: []string{"submit", "--constraint", "zone=", "--", "x"}, Flag: "--constraint"},
		{Args: []string{"run", "--gang", "4", "--", "x"}, Flag: "--gang"},
		{Args: []string{"run", "--gang", "-1", "--cores-per-executor", "1", "--", "x"}, Flag: "--gang"},
		{Args: []string{"run", "--gang-restart", "--", "x"}, Flag: "--gang-restart"},
	}
	testproc.CheckBadFlags(t, berthBin, 1, append(cleanEnv(), f.env()...), cases)
	if reqs := f.requests(); len(reqs) != 0 {
		t.Fatalf("bad input still sent %+v", reqs)
	}
}
