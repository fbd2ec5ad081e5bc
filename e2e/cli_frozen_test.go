package e2e

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/berth-cluster/berth/testkit/testcluster"
	"github.com/berth-cluster/berth/testkit/testproc"
)

// Two of three masters frozen with SIGSTOP (a hung host, a paused VM):
// their ports still take connections and requests, and nothing answers.
// berth status says there is no quorum; berth submit, run and kill app
// are then refused within 2 s, certainly not done (exit 3), saying no
// quorum: before, each write was sent to a frozen master and waited its
// request timeout, the whole --timeout in all (the kill 32 s, past its
// 30 s). The frozen masters are let go at the end.
func TestCLIWritesWithoutAQuorumOfFrozenMasters(t *testing.T) {
	t.Parallel()
	hc := haCluster(t, 3, nil, "w1")
	appID, _, _ := hc.runLongApp("frozen", 1)
	leader, _ := hc.leader(10 * time.Second)
	// Every master's API address is known to all (each asks the leader to
	// record it, membership.Announce): the survivor must ask both frozen
	// masters to know it has no quorum, and one never asked is not
	// counted against it. Each master's own view is asked: a follower
	// behind the leader (two of three commit) may not have the record yet,
	// and one frozen before it has would keep it from the survivor for
	// good (a make test run did so).
	testproc.Eventually(t, 15*time.Second, "every master's view to list every master's API address", func() error {
		for _, from := range hc.Masters {
			st, err := hc.view(from)
			if err != nil {
				return fmt.Errorf("%s: %w", from.ID, err)
			}
			for _, m := range st.Masters {
				if m.APIAddr == "" {
					return fmt.Errorf("master %s has no API address in %s's view", m.ID, from.ID)
				}
			}
		}
		return nil
	})
	frozen := []*testcluster.Master{leader, hc.others(leader)[0]}
	for _, m := range frozen {
		if err := m.Proc().Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = m.Proc().Signal(syscall.SIGCONT) })
	}
	t.Logf("froze %s and %s", frozen[0].ID, frozen[1].ID)
	testproc.Eventually(t, 30*time.Second, "berth status to say there is no leader and no quorum", func() error {
		if r := hc.cli("status"); r.code != 0 || !strings.Contains(r.stdout, "no quorum; writes are refused") {
			return fmt.Errorf("%s", r)
		}
		return nil
	})
	for _, args := range [][]string{{"submit", "--", "/bin/true"}, {"run", "--", "/bin/true"}, {"kill", "app", appID}} {
		r := hc.cli(args...)
		t.Logf("berth %s: exit %d after %s", strings.Join(args, " "), r.code, r.took.Round(time.Millisecond))
		if r.code != 3 || !strings.Contains(r.stderr, "no quorum") || strings.Contains(r.stderr, "outcome unknown") || r.took > 2*time.Second {
			t.Errorf("berth %s with two masters frozen: %s; want exit 3 saying no quorum within 2 s", strings.Join(args, " "), r)
		}
	}
}
