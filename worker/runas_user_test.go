package worker

import (
	"strings"
	"testing"
)

// A tenant's Unix user is refused where running as it would give the
// tenant more than its own: root, root's group, the worker's user, or an
// id of the range dynamic tenants get (another tenant's uid).
func TestTenantUsersRefused(t *testing.T) {
	const self = 1500
	for _, c := range []struct {
		uid, gid uint32
		want     string
	}{
		{0, 0, "root"},
		{1001, 0, "root's group"},
		{self, 1001, "the worker's own user"},
		{tenantIDBase + 7, 1001, "in the range of the ids this worker gives dynamic tenants"},
		{1001, tenantIDBase, "in the range"},
		{1001, 1001, ""},
		{tenantIDBase - 1, tenantIDBase + tenantIDs, ""},
	} {
		got := refusedTenantUser(c.uid, c.gid, self)
		if c.want == "" && got != "" || c.want != "" && !strings.HasPrefix(got, c.want) {
			t.Errorf("uid %d gid %d: %q, want %q", c.uid, c.gid, got, c.want)
		}
	}
}
