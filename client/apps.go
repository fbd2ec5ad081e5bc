package client

import (
	"context"
	"fmt"
	"net/url"

	"github.com/berth-cluster/berth/wire"
)

// Cluster returns the cluster's state as one master sees it, which may be a
// follower: check View (a follower knows no executors nor heartbeats).
func (c *Client) Cluster(ctx context.Context) (wire.ClusterStatus, error) {
	return c.cluster(ctx, "")
}

func (c *Client) cluster(ctx context.Context, query string) (wire.ClusterStatus, error) {
	var st wire.ClusterStatus
	r := on(wire.MasterAPI.Cluster.Endpoint, nil)
	r.path += query
	if err := c.call(ctx, r, &st); err != nil {
		return st, fmt.Errorf("cluster status: %w", err)
	}
	return st, nil
}

// summaryQuery asks GET /v1/cluster for the workers' summary without
// their list.
const summaryQuery = "?" + wire.ClusterWorkersParam + "=false"

// LeaderCluster returns the cluster's state as the leader sees it when it
// can: if the master that answers is a follower naming a leader, the leader
// is asked too. Without a reachable leader it returns the follower's view.
func (c *Client) LeaderCluster(ctx context.Context) (wire.ClusterStatus, error) {
	return c.leaderCluster(ctx, "")
}

// LeaderClusterSummary is LeaderCluster without the list of workers (their
// summary stays): cheap on a cluster of many thousand workers.
func (c *Client) LeaderClusterSummary(ctx context.Context) (wire.ClusterStatus, error) {
	return c.leaderCluster(ctx, summaryQuery)
}

// ClusterQuery says what a cluster status leaves out: the workers' list
// (their summary stays), the completed apps and drivers.
type ClusterQuery struct {
	NoWorkers, NoCompleted bool
}

// LeaderClusterQuery is LeaderCluster with what q leaves out.
func (c *Client) LeaderClusterQuery(ctx context.Context, q ClusterQuery) (wire.ClusterStatus, error) {
	v := url.Values{}
	if q.NoWorkers {
		v.Set(wire.ClusterWorkersParam, "false")
	}
	if q.NoCompleted {
		v.Set(wire.ClusterCompletedParam, "false")
	}
	query := ""
	if len(v) > 0 {
		query = "?" + v.Encode()
	}
	return c.leaderCluster(ctx, query)
}

func (c *Client) leaderCluster(ctx context.Context, query string) (wire.ClusterStatus, error) {
	st, err := c.cluster(ctx, query)
	if err != nil || st.View != wire.ViewFollower || st.Leader == "" {
		return st, err
	}
	leader, perr := wire.ParseMasterURL("leader", st.Leader)
	if perr != nil {
		return st, nil
	}
	var lst wire.ClusterStatus
	actx, cancel := context.WithTimeout(ctx, c.requestTimeout)
	defer cancel()
	if err := c.api.Do(actx, wire.MasterAPI.Cluster.Method, leader+wire.MasterAPI.Cluster.Path()+query, nil, &lst); err != nil || lst.View != wire.ViewLeader {
		return st, nil // the follower's view is all there is
	}
	c.setLeader(leader)
	return lst, nil
}

// RegisterApp registers an application and returns its id. It is sent
// under an idempotency key, so it is retried through failovers without
// risk of registering the app twice (see the package doc).
func (c *Client) RegisterApp(ctx context.Context, desc wire.AppDescription, opts ...SubmitOption) (string, error) {
	return submit(ctx, c, wire.MasterAPI.RegisterApp, desc, opts, fmt.Sprintf("register app %q", desc.Name))
}

// App returns an application's status.
func (c *Client) App(ctx context.Context, id string) (wire.AppStatus, error) {
	return onEntity(ctx, c, wire.MasterAPI.App, "app", id)
}

// KillApp kills an application (it ends KILLED) and returns its status
// once the kill is durable; killing an app that already ended returns its
// final status.
func (c *Client) KillApp(ctx context.Context, id string) (wire.AppStatus, error) {
	return onEntity(ctx, c, wire.MasterAPI.KillApp, "kill app", id)
}

// UnregisterApp tells the master the app's client is done (it ends FINISHED).
func (c *Client) UnregisterApp(ctx context.Context, id string) error {
	return c.appWrite(ctx, "unregister", wire.MasterAPI.UnregisterApp.Endpoint, id, nil)
}

// HeartbeatApp keeps the app's lease for a client that holds no event stream
// (Events holds the lease by itself while connected).
func (c *Client) HeartbeatApp(ctx context.Context, id string) error {
	return c.appWrite(ctx, "heartbeat", wire.MasterAPI.AppHeartbeat.Endpoint, id, nil)
}

// SetExecutorLimit sets how many executors the app may hold in total.
func (c *Client) SetExecutorLimit(ctx context.Context, id string, limit int) error {
	return c.appWrite(ctx, "set executor limit of", wire.MasterAPI.SetExecutorLimit.Endpoint, id, wire.ExecutorLimit{Limit: limit})
}

// KillExecutors kills some executors of an app.
func (c *Client) KillExecutors(ctx context.Context, id string, executorIDs []int) error {
	return c.appWrite(ctx, "kill executors of", wire.MasterAPI.KillExecutors.Endpoint, id, wire.KillExecutors{ExecutorIDs: executorIDs})
}

// appWrite sends an idempotent write about app id: repeating any of them
// has the effect of sending it once, so it is retried after any failure.
func (c *Client) appWrite(ctx context.Context, what string, e wire.Endpoint, id string, in any) error {
	if err := c.call(ctx, on(e, in, id), nil); err != nil {
		return fmt.Errorf("%s app %s: %w", what, id, err)
	}
	return nil
}
