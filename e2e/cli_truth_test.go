package e2e

// berth, the CLI, when masters fail (issue 24): status says which masters
// do not answer and since when, says there is no leader and no quorum, and
// does not take a follower's ignorance for a waiting app; a submission
// refused before it was proposed is "not submitted", with its own exit
// code.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/berth-cluster/berth/testkit/testcluster"
	"github.com/berth-cluster/berth/testkit/testproc"
	"github.com/berth-cluster/berth/wire"
)

// cliRun is one run of bin/berth: what it printed, its exit code and how
// long it took.
type cliRun struct {
	stdout, stderr string
	code           int
	took           time.Duration
}

func (r cliRun) String() string {
	return fmt.Sprintf("exit %d after %s\nstdout:\n%s\nstderr:\n%s", r.code, r.took.Round(time.Millisecond), r.stdout, r.stderr)
}

// berthEnv is this process's environment without BERTH_ variables, so
// that only the arguments a test gives count.
func berthEnv() []string {
	return slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "BERTH_") })
}

// runBerth runs bin/berth with args (killed after a minute).
func runBerth(t *testing.T, args ...string) cliRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin.Berth, args...)
	cmd.Env = berthEnv()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	r := cliRun{stdout: stdout.String(), stderr: stderr.String(), took: time.Since(start)}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		r.code = exit.ExitCode()
	case err != nil:
		t.Fatalf("berth %v: %v", args, err)
	}
	return r
}

// operatorArgs are the global flags of an operator's berth on masters.
func operatorArgs(masters ...string) []string {
	return []string{"--master", strings.Join(masters, ","), "--secret", secret, "--tls-ca-file", bin.PKI.CAFile()}
}

// cli runs berth as the operator of the cluster, through every master.
func (cl *cluster) cli(args ...string) cliRun {
	cl.t.Helper()
	return runBerth(cl.t, append(operatorArgs(cl.URLs()...), args...)...)
}

// cliStatus is berth status --json.
func (cl *cluster) cliStatus() (wire.ClusterStatus, error) {
	var st wire.ClusterStatus
	r := cl.cli("status", "--json")
	if r.code != 0 {
		return st, fmt.Errorf("berth status --json: %s", r)
	}
	return st, json.Unmarshal([]byte(r.stdout), &st)
}

func masterIn(st wire.ClusterStatus, id string) (wire.MasterNode, bool) {
	for _, m := range st.Masters {
		if m.ID == id {
			return m, true
		}
	}
	return wire.MasterNode{}, false
}

func unreachableIn(st wire.ClusterStatus, id string) bool {
	m, ok := masterIn(st, id)
	return ok && m.Reachable != nil && !*m.Reachable && m.UnreachableSince != nil
}

// lineOf is the line of text that holds what, "" if none does.
func lineOf(text, what string) string {
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, what) {
			return l
		}
	}
	return ""
}

// A master killed with SIGKILL is shown unreachable, and since when,
// within the masters' probe interval (1 s) and a CLI run; with two of
// three down, status says there is no leader and no quorum, and how old
// what it shows is, and the running app is not shown WAITING; berth
// submit and berth run are then refused, certainly not submitted, exit 3.
func TestCLIStatusTellsTheTruthWhenMastersFail(t *testing.T) {
	t.Parallel()
	hc := haCluster(t, 3, nil, "w1")
	appID, _, _ := hc.runLongApp("truth", 1)
	leader, _ := hc.leader(10 * time.Second)
	rest := hc.others(leader)
	follower, survivor := rest[0], rest[1]

	testproc.Eventually(t, 15*time.Second, "berth status --json to list every master reachable, sorted by id", func() error {
		st, err := hc.cliStatus()
		if err != nil {
			return err
		}
		var ids []string
		for _, m := range st.Masters {
			if m.Reachable == nil || !*m.Reachable {
				return fmt.Errorf("master %s: reachable %v", m.ID, m.Reachable)
			}
			ids = append(ids, m.ID)
		}
		if !slices.Equal(ids, []string{"m1", "m2", "m3"}) {
			return fmt.Errorf("masters %v, want m1, m2, m3", ids)
		}
		return nil
	})

	follower.Proc().Kill()
	killedAt := time.Now()
	var shownAt time.Time
	testproc.Eventually(t, 15*time.Second, "berth status --json to show "+follower.ID+" unreachable", func() error {
		st, err := hc.cliStatus()
		if err != nil {
			return err
		}
		if !unreachableIn(st, follower.ID) {
			m, _ := masterIn(st, follower.ID)
			return fmt.Errorf("%s: %+v", follower.ID, m)
		}
		if m, _ := masterIn(st, follower.ID); m.Leader {
			return fmt.Errorf("%s unreachable but listed as the leader", follower.ID)
		}
		shownAt = time.Now()
		return nil
	})
	took := shownAt.Sub(killedAt)
	t.Logf("%s shown unreachable %s after its kill -9", follower.ID, took.Round(time.Millisecond))
	if took > 2500*time.Millisecond { // the 1 s probe, its 0.5 s timeout, a run of berth
		t.Errorf("%s shown unreachable only %s after its kill, want within the probe interval (1 s) and a run of berth", follower.ID, took)
	}
	r := hc.cli("status")
	line := lineOf(r.stdout, "  "+follower.ID+" ")
	if r.code != 0 || !strings.Contains(line, "UNREACHABLE since ") || strings.Contains(line, "follower") ||
		!strings.Contains(r.stdout, "1 of 3 masters unreachable; the other 2 keep a quorum") {
		t.Errorf("berth status with %s killed: %s", follower.ID, r)
	}

	leader.Proc().Kill()
	t.Logf("killed %s (leader) too; %s survives", leader.ID, survivor.ID)
	testproc.Eventually(t, 30*time.Second, "berth status to say there is no leader and no quorum", func() error {
		r = hc.cli("status")
		if r.code != 0 || !strings.Contains(r.stdout, "no leader: 2 of 3 masters unreachable, no quorum; writes are refused; last known state as of ") {
			return fmt.Errorf("%s", r)
		}
		return nil
	})
	t.Logf("berth status without a quorum:\n%s", r.stdout)
	appLine := lineOf(r.stdout, appID)
	if !strings.Contains(appLine, "UNKNOWN") || strings.Contains(appLine, string(wire.AppWaiting)) {
		t.Errorf("the running app %s as the survivor shows it: %q, want UNKNOWN, never WAITING", appID, appLine)
	}
	for _, m := range []*testcluster.Master{leader, follower} {
		if line := lineOf(r.stdout, "  "+m.ID+" "); !strings.Contains(line, "UNREACHABLE since ") {
			t.Errorf("%s's line: %q", m.ID, line)
		}
	}
	st, err := hc.cliStatus()
	if err != nil {
		t.Fatal(err)
	}
	if st.View != wire.ViewFollower || st.Leader != "" || st.LeaderContact == nil || !unreachableIn(st, leader.ID) || !unreachableIn(st, follower.ID) {
		t.Errorf("berth status --json without a quorum: view %q leader %q leaderContact %v masters %+v", st.View, st.Leader, st.LeaderContact, st.Masters)
	}
	if a, ok := appStatus(st, appID); !ok || a.State != wire.AppUnknown || a.CoresGranted != 1 {
		t.Errorf("app %s in the survivor's view: %+v, want UNKNOWN with its 1 core placed", appID, a)
	}

	// Refused before proposed, at once: with its default 30 s timeout,
	// berth submit took 30.8 s and berth kill app 36.3 s (ending on a
	// dial error). Now the survivor says no quorum, the CLI tries the
	// others (refused), and says so: exit 3, within 2 s.
	for _, args := range [][]string{{"submit", "--", "/bin/true"}, {"run", "--", "/bin/true"}, {"kill", "app", appID}} {
		r := hc.cli(args...)
		if r.code != 3 || !strings.Contains(r.stderr, "no quorum") || strings.Contains(r.stderr, "outcome unknown") ||
			!strings.Contains(r.stderr, "nothing was changed") || r.took > 2*time.Second {
			t.Errorf("berth %s without a quorum: %s; want exit 3 saying no quorum within 2 s", strings.Join(args, " "), r)
		}
	}
}
