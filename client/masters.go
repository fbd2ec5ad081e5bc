package client

import (
	"context"
	"fmt"

	"github.com/berth-cluster/berth/wire"
)

// JoinMaster asks the cluster's leader to add a master to the Raft
// configuration; it answers with the masters after the change. Joining a
// master that is already a member at the same address changes nothing, so
// it is safe to retry.
func (c *Client) JoinMaster(ctx context.Context, req wire.JoinRequest) ([]wire.MasterNode, error) {
	var nodes []wire.MasterNode
	if err := c.call(ctx, on(wire.MasterAPI.JoinMaster.Endpoint, req), &nodes); err != nil {
		return nil, fmt.Errorf("join master %s: %w", req.ID, err)
	}
	return nodes, nil
}

// LeaveMaster asks the cluster's leader to remove a master from the Raft
// configuration.
func (c *Client) LeaveMaster(ctx context.Context, id string) ([]wire.MasterNode, error) {
	var nodes []wire.MasterNode
	if err := c.call(ctx, on(wire.MasterAPI.LeaveMaster.Endpoint, wire.LeaveRequest{ID: id}), &nodes); err != nil {
		return nil, fmt.Errorf("remove master %s: %w", id, err)
	}
	return nodes, nil
}
