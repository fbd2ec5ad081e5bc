package client

import (
	"context"
	"fmt"

	"github.com/berth-cluster/berth/wire"
)

// SignInLink asks a master for a one-time link that signs a browser in to
// its web UI (berth ui). Any master makes one, for itself: the link names
// the master that answered.
func (c *Client) SignInLink(ctx context.Context) (wire.SignInLink, error) {
	var out wire.SignInLink
	if err := c.call(ctx, on(wire.MasterAPI.SignInLink.Endpoint, nil), &out); err != nil {
		return out, fmt.Errorf("sign-in link: %w", err)
	}
	return out, nil
}
