package failover

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/berth-cluster/berth/internal/httpx"
	"github.com/berth-cluster/berth/internal/poll"
	"github.com/berth-cluster/berth/testkit/testcluster"
	"github.com/berth-cluster/berth/wire"
)

// statusClient reads the masters' GET /v1/cluster with the cluster's
// secret. It keeps idle connections to each master, so that polling them
// every few milliseconds during a failover reuses its connections; each
// read bounds itself (see status).
func statusClient(pki *testcluster.PKI, secret string) *httpx.Client {
	c := pki.TLSClient(secret, 0)
	c.HTTP.Transport.(*http.Transport).MaxIdleConnsPerHost = 16
	return c
}

// status is one GET /v1/cluster on url, bounded by timeout: the whole
// answer, as the leader's or a follower's own view.
func (cl *cluster) status(ctx context.Context, url string, timeout time.Duration) (wire.ClusterStatus, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return httpx.Call(ctx, cl.api, url, wire.MasterAPI.Cluster, wire.None{})
}

// findApp is the active app id of st.
func findApp(st wire.ClusterStatus, id string) (wire.AppStatus, bool) {
	i := slices.IndexFunc(st.ActiveApps, func(a wire.AppStatus) bool { return a.ID == id })
	if i < 0 {
		return wire.AppStatus{}, false
	}
	return st.ActiveApps[i], true
}

func runningExecutors(a wire.AppStatus) []int {
	var ids []int
	for _, e := range a.Executors {
		if e.State == wire.ExecutorRunning {
			ids = append(ids, e.ID)
		}
	}
	slices.Sort(ids)
	return ids
}

// steadyProblem says what keeps the cluster from being steady, "" if
// nothing: one ALIVE leader with every worker ALIVE (and the app RUNNING
// with all its executors), every other running master its caught-up
// follower.
func (cl *cluster) steadyProblem(ctx context.Context, withApp bool) (*masterNode, wire.ClusterStatus, string) {
	var leader *masterNode
	var lst wire.ClusterStatus
	views := map[*masterNode]wire.ClusterStatus{}
	for _, m := range cl.masters {
		if !m.running() {
			continue
		}
		st, err := cl.status(ctx, m.url, 2*time.Second)
		if err != nil {
			return nil, lst, fmt.Sprintf("%s: %v", m.id, err)
		}
		views[m] = st
		if st.View == wire.ViewLeader {
			if leader != nil {
				return nil, lst, fmt.Sprintf("two leader views: %s and %s", leader.id, m.id)
			}
			leader, lst = m, st
		}
	}
	if leader == nil {
		return nil, lst, "no leader"
	}
	if lst.Status != wire.MasterAlive {
		return nil, lst, fmt.Sprintf("leader %s is %s", leader.id, lst.Status)
	}
	if n := lst.WorkerSummary.Alive; n != len(cl.workers) {
		return nil, lst, fmt.Sprintf("leader %s has %d/%d workers ALIVE", leader.id, n, len(cl.workers))
	}
	for m, st := range views {
		if m == leader {
			continue
		}
		if st.View != wire.ViewFollower || st.LeaderID != leader.id || st.Epoch != lst.Epoch {
			return nil, lst, fmt.Sprintf("%s is not a caught-up follower (view %s, leader %q, epoch %d; leader epoch %d)", m.id, st.View, st.LeaderID, st.Epoch, lst.Epoch)
		}
	}
	if withApp && cl.app != nil {
		a, ok := findApp(lst, cl.app.id)
		if !ok {
			return nil, lst, fmt.Sprintf("app %s is not active", cl.app.id)
		}
		if a.State != wire.AppRunning {
			return nil, lst, fmt.Sprintf("app %s is %s", a.ID, a.State)
		}
		if n := len(runningExecutors(a)); n != cl.cfg.executors {
			return nil, lst, fmt.Sprintf("app %s has %d/%d executors RUNNING", a.ID, n, cl.cfg.executors)
		}
	}
	return leader, lst, ""
}

// steady waits until steadyProblem finds nothing.
func (cl *cluster) steady(ctx context.Context, timeout time.Duration, withApp bool) (*masterNode, wire.ClusterStatus, error) {
	var (
		leader  *masterNode
		st      wire.ClusterStatus
		problem string
	)
	if poll.Within(ctx, timeout, 50*time.Millisecond, func() bool {
		leader, st, problem = cl.steadyProblem(ctx, withApp)
		return problem == ""
	}) {
		return leader, st, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, st, err
	}
	return nil, st, fmt.Errorf("%s cluster not steady within %s: %s", cl.name, timeout, problem)
}
