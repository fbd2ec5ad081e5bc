package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/berth-cluster/berth/wire"
)

// SPARK-27750 with real processes: one worker of 2 cores, two pi drivers
// of 1 core whose apps each need a core. Without a cap both drivers take a
// core each and their apps wait for ever (master/maxdrivers_test.go shows
// that); with --max-drivers 1 the second driver waits SUBMITTED and says
// why, never are two drivers running at once, and both jobs finish.
func TestMaxDriversLetsDriversAndTheirAppsFinish(t *testing.T) {
	t.Parallel()
	cl := daemonCluster(t, []string{"--max-drivers", "1"}, 2, "md1")
	args := []string{piBin, "--tasks", "8", "--samples", "2000000", "--max-cores", "1", "--executor-memory", "64m"}
	var ids []string
	for range 2 {
		id, err := cl.c.SubmitDriver(callCtx(t, 20*time.Second), wire.DriverDescription{Command: args, Cores: 1, MemoryMB: 128})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	// The whole history, polled until both end: never two drivers
	// running, and the one held back says so.
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	toldWhy := false
	for {
		st, err := cl.c.Cluster(callCtx(t, 10*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		running, ended := 0, 0
		for _, d := range append(st.ActiveDrivers, st.CompletedDrivers...) {
			switch {
			case d.State == wire.DriverRunning:
				running++
			case d.State == wire.DriverSubmitted && strings.Contains(d.Waiting, "--max-drivers"):
				toldWhy = true
			case d.State.Finished():
				if d.State != wire.DriverFinished {
					t.Fatalf("driver %s ended %s: %s", d.ID, d.State, d.Message)
				}
				ended++
			}
		}
		if running > 1 {
			t.Fatalf("%d drivers running at once with --max-drivers 1", running)
		}
		if ended == 2 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the two pi jobs did not both finish: %d ended (%+v)", ended, st.ActiveDrivers)
		case <-time.After(50 * time.Millisecond): // a poll's interval, not a synchronisation
		}
	}
	if !toldWhy {
		t.Error("the held-back driver never said it waits for --max-drivers")
	}
}
