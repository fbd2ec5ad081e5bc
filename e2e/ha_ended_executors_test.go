package e2e

import (
	"fmt"
	"reflect"
	"syscall"
	"testing"
	"time"

	"github.com/berth-cluster/berth/wire"
)

// TestHAEndedExecutorsSurviveFailover pins what a user sees of an app's
// executors that ended, through a kill -9 of the leader: an executor whose
// process was killed (kill -9) is listed by the new leader as the old one
// listed it (state, reason, exit code, worker), beside its replacement,
// and its log still reads through the cluster. Before, only the leader's
// memory held an active app's ended executors, and a new leader's list
// lacked them.
func TestHAEndedExecutorsSurviveFailover(t *testing.T) {
	t.Parallel()
	hc := haCluster(t, 3, []string{"--worker-timeout", "10s", "--recovery-timeout", "30s"}, "w1")
	appID, _, before := hc.runLongApp("ha-ended", 2)
	victim := executorsOf(t, before, appID)[0]
	pid, ok := hc.execPids()[execKey(appID, victim)]
	if !ok {
		t.Fatalf("no process for executor %d", victim)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	endedAs := func(a wire.AppStatus) (wire.ExecutorStatus, error) {
		for _, e := range a.Executors {
			if e.ID == victim && e.State.Finished() {
				return e, nil
			}
		}
		return wire.ExecutorStatus{}, fmt.Errorf("executor %d not listed as ended", victim)
	}
	var want wire.ExecutorStatus
	hc.appWhen(appID, 30*time.Second, "the killed executor ended and replaced", func(a wire.AppStatus) error {
		var err error
		if want, err = endedAs(a); err != nil {
			return err
		}
		if n := len(executorsIn(a, wire.ExecutorRunning)); n != 2 {
			return fmt.Errorf("%d RUNNING executors, want 2", n)
		}
		return nil
	})
	t.Logf("the leader lists executor %d as %s: %q", victim, want.State, want.Message)

	leader, _ := hc.leader(10 * time.Second)
	leader.Proc().Kill()
	newLeader, _ := hc.leader(haFailoverBound+10*time.Second, leader)
	got := hc.appWhen(appID, 30*time.Second, "the new leader lists the ended executor", func(a wire.AppStatus) error {
		_, err := endedAs(a)
		return err
	})
	if e, _ := endedAs(got); !reflect.DeepEqual(e, want) {
		t.Errorf("after the failover to %s executor %d is listed\n %+v\nbefore\n %+v", newLeader.ID, victim, e, want)
	}
	if _, err := hc.c.ExecutorLogLines(callCtx(t, 10*time.Second), appID, victim, "stderr", 20); err != nil {
		t.Errorf("the ended executor's log after the failover: %v", err)
	}
}
