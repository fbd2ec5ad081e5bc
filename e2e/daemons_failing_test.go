package e2e

// Apps whose executors always fail (see daemons_test.go).

import (
	"fmt"
	"testing"
	"time"

	"github.com/berth-cluster/berth/testkit/testproc"
	"github.com/berth-cluster/berth/wire"
)

// TestDaemonsExecutorsThatCannotStartFailApp pins SPARK-27510 for a command
// that cannot even start: the app ends FAILED after --max-executor-retries
// failures in a row, and no executor is launched after that.
func TestDaemonsExecutorsThatCannotStartFailApp(t *testing.T) {
	t.Parallel()
	checkFailingExecutorsFailApp(t, []string{"/nonexistent-berth-e2e/no-such-program"}, 0)
}

// TestDaemonsExecutorsExitingNonZeroFailApp pins SPARK-27510 for a command
// that starts and exits non-zero at once: the worker reports it RUNNING for
// a moment every time, which must not reset the app's failure count (only an
// executor that stays RUNNING does), so the app ends FAILED after
// --max-executor-retries failures in a row, with no launch after that.
func TestDaemonsExecutorsExitingNonZeroFailApp(t *testing.T) {
	t.Parallel()
	checkFailingExecutorsFailApp(t, []string{"sh", "-c", "exit 3"}, 3)
}

// checkFailingExecutorsFailApp runs an app whose executors run command, which
// fails every time (with exitCode, unless 0), and checks that the app ends
// FAILED after exactly --max-executor-retries launches, with no launch after.
func checkFailingExecutorsFailApp(t *testing.T, command []string, exitCode int) {
	const retries = 3
	cl := daemonCluster(t, []string{"--max-executor-retries", fmt.Sprint(retries)}, 2, "df1")
	appID, err := cl.c.RegisterApp(callCtx(t, 20*time.Second), wire.AppDescription{
		Name: "always-fails", Command: command, MaxCores: 1, MemoryPerExecutorMB: 64,
	})
	if err != nil {
		t.Fatal(err)
	}
	events := followEvents(t, cl.c, appID)

	a := cl.appWhen(appID, 20*time.Second, "app FAILED", func(a wire.AppStatus) error {
		if len(a.Executors) > retries {
			t.Fatalf("app %s launched %d executors without failing, more than --max-executor-retries %d: %s",
				a.State, len(a.Executors), retries, describeExecs(a))
		}
		if a.State != wire.AppFailed {
			return fmt.Errorf("want FAILED")
		}
		return nil
	})
	if len(a.Executors) != retries {
		t.Errorf("app ran %d executors %s, want exactly --max-executor-retries %d", len(a.Executors), describeExecs(a), retries)
	}
	for _, e := range a.Executors {
		if e.State != wire.ExecutorFailed || (exitCode != 0 && (e.ExitCode == nil || *e.ExitCode != exitCode)) {
			t.Errorf("executor %d: %s exit %v (%s), want FAILED with exit code %d", e.ID, e.State, e.ExitCode, e.Message, exitCode)
		}
	}
	events.waitFor(t, 10*time.Second, "appRemoved FAILED on the app's stream", func(evs []appEvent) error {
		for _, ev := range evs {
			if ev.Type == wire.EventAppRemoved {
				if ev.App == nil || ev.App.State != wire.AppFailed {
					return fmt.Errorf("appRemoved with %+v, want the app FAILED", ev.App)
				}
				return nil
			}
		}
		return fmt.Errorf("no appRemoved: %s", eventTypes(evs))
	})
	// No launch after the app failed: the worker's log of applied
	// launches and the app's executors stop growing.
	launches := func() int { return logCount(cl.worker("df1").Proc, `command applied.*launch executor`) }
	testproc.Stable(t, 2*time.Second, "no executor launched after the app FAILED", func() error {
		if n := launches(); n != retries {
			return fmt.Errorf("the worker applied %d executor launches, want %d", n, retries)
		}
		st, err := cl.status()
		if err != nil {
			return err
		}
		if a, _ := appStatus(st, appID); a.State != wire.AppFailed || len(a.Executors) != retries {
			return fmt.Errorf("app now %s with executors %s", a.State, describeExecs(a))
		}
		if w, _ := workerIn(st, "df1"); w.CoresUsed != 0 {
			return fmt.Errorf("worker still has %d cores in use", w.CoresUsed)
		}
		return nil
	})
}
