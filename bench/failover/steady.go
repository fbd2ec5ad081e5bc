package failover

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/berth-cluster/berth/internal/poll"
	"github.com/berth-cluster/berth/wire"
)

// status is one GET /v1/cluster on url, bounded by timeout.
func (cl *cluster) status(ctx context.Context, url string, timeout time.Duration) (wire.ClusterStatus, error) {
	var st wire.ClusterStatus
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"/v1/cluster", nil)
	if err != nil {
		return st, err
	}
	req.Header.Set("Authorization", "Bearer "+cl.cfg.secret)
	resp, err := cl.hc.Do(req)
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return st, fmt.Errorf("GET %s/v1/cluster: %s: %s", url, resp.Status, strings.TrimSpace(string(body)))
	}
	err = json.NewDecoder(resp.Body).Decode(&st)
	return st, err
}

func aliveWorkers(st wire.ClusterStatus) int {
	n := 0
	for _, w := range st.Workers {
		if w.State == wire.WorkerAlive {
			n++
		}
	}
	return n
}

func findApp(st wire.ClusterStatus, id string) (wire.AppStatus, bool) {
	for _, a := range st.ActiveApps {
		if a.ID == id {
			return a, true
		}
	}
	return wire.AppStatus{}, false
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
	if n := aliveWorkers(lst); n != len(cl.workers) {
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
