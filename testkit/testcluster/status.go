package testcluster

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/berth-cluster/berth/internal/poll"
	"github.com/berth-cluster/berth/wire"
)

// Status asks one master for GET /v1/cluster (its own answer: a follower
// answers with its replica, marked so), without the completed apps and
// drivers unless Options.ListCompleted.
func (c *Cluster) Status(ctx context.Context, m *Master) (wire.ClusterStatus, error) {
	var st wire.ClusterStatus
	r := wire.MasterAPI.Cluster
	url := m.URL + r.Path()
	if !c.opt.ListCompleted {
		url += "?" + wire.ClusterCompletedParam + "=false"
	}
	req, err := http.NewRequestWithContext(ctx, r.Method, url, nil)
	if err != nil {
		return st, err
	}
	req.Header.Set("Authorization", "Bearer "+c.opt.Secret)
	resp, err := c.http.Do(req)
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return st, fmt.Errorf("%s %s: %s", r.Method, url, resp.Status)
	}
	return st, json.NewDecoder(resp.Body).Decode(&st)
}

// Leader returns the master that answers as the ALIVE leader now, if any.
// The masters are asked at once, each within ctx, and the first leader's
// answer is returned without waiting for the others: a frozen master holds
// up nobody.
func (c *Cluster) Leader(ctx context.Context) (*Master, wire.ClusterStatus, error) {
	type answer struct {
		m   *Master
		st  wire.ClusterStatus
		err error
	}
	answers := make(chan answer, len(c.Masters))
	asked := 0
	var seen []string
	for _, m := range c.Masters {
		if p := m.Proc(); p == nil || p.Exited() {
			seen = append(seen, m.ID+": not running")
			continue
		}
		asked++
		go func() {
			st, err := c.Status(ctx, m)
			answers <- answer{m, st, err}
		}()
	}
	for range asked {
		a := <-answers
		switch {
		case a.err != nil:
			seen = append(seen, fmt.Sprintf("%s: %v", a.m.ID, a.err))
		case a.st.View == wire.ViewLeader && a.st.Status == wire.MasterAlive:
			return a.m, a.st, nil
		default:
			seen = append(seen, fmt.Sprintf("%s: %s %s", a.m.ID, a.st.View, a.st.Status))
		}
	}
	return nil, wire.ClusterStatus{}, fmt.Errorf("no ALIVE leader: %s", strings.Join(seen, "; "))
}

// WaitLeader polls until a master answers as the ALIVE leader, or ctx ends.
func (c *Cluster) WaitLeader(ctx context.Context) (*Master, wire.ClusterStatus, error) {
	var m *Master
	var st wire.ClusterStatus
	var last error // the last answer while ctx was alive: the one worth telling
	err := poll.UntilNil(ctx, 20*time.Millisecond, func() (err error) {
		m, st, err = c.Leader(ctx)
		if ctx.Err() == nil {
			last = err
		}
		return err
	})
	if err != nil {
		return nil, st, errors.Join(ctx.Err(), cmp.Or(last, err))
	}
	return m, st, nil
}

// RaftStatus asks one master for its own Raft figures (GET
// /v1/raft/status): its state, term, commit and applied indexes.
func (c *Cluster) RaftStatus(ctx context.Context, m *Master) (wire.RaftFigures, error) {
	var f wire.RaftFigures
	r := wire.MasterAPI.RaftStatus
	url := m.URL + r.Path()
	req, err := http.NewRequestWithContext(ctx, r.Method, url, nil)
	if err != nil {
		return f, err
	}
	req.Header.Set("Authorization", "Bearer "+c.opt.Secret)
	resp, err := c.http.Do(req)
	if err != nil {
		return f, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return f, fmt.Errorf("%s %s: %s", r.Method, url, resp.Status)
	}
	return f, json.NewDecoder(resp.Body).Decode(&f)
}
