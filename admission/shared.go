package admission

import (
	"regexp"
	"slices"
	"strings"

	"github.com/berth-cluster/berth/wire"
)

// unixUser is what a tenant's Unix user may be called (POSIX portable user
// names, as useradd takes them); tenantName what a tenant may be called:
// no dot, as its token is bt.<name>.<secret part>.
var (
	unixUser   = regexp.MustCompile(`^[a-z_][a-z0-9_-]{0,31}$`)
	tenantName = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,62}$`)
	tokenHash  = regexp.MustCompile(`^[0-9a-f]{64}$`)
)

// TenantName checks a tenant's name.
func TenantName(name string) error {
	if !tenantName.MatchString(name) {
		return BadRequest("tenant %q: want lowercase letters, digits, '-' or '_', starting with a letter or digit, at most 63", name)
	}
	return nil
}

// Tenant checks a POST /v1/tenants/{name} body. That its queues exist,
// and that no other tenant has its Unix user, is the master's to check
// against its state (TenantInState).
func Tenant(s wire.TenantSpec) error {
	if len(s.Queues) == 0 {
		return BadRequest("queues: a tenant needs at least one queue to submit into")
	}
	for _, q := range s.Queues {
		if err := wire.CheckQueueName("queues", q); err != nil {
			return BadRequest("%v", err)
		}
	}
	if s.DefaultQueue != "" && !slices.Contains(s.Queues, s.DefaultQueue) {
		return BadRequest("defaultQueue %q: want one of its queues (%s)", s.DefaultQueue, strings.Join(s.Queues, ", "))
	}
	return UnixUser(s.UnixUser)
}

// UnixUser checks a tenant's Unix user ("" for none): a user name, and not
// root, whose processes could do anything to the worker and every other
// tenant (docs/SECURITY.md).
func UnixUser(name string) error {
	switch {
	case name == "":
		return nil
	case !unixUser.MatchString(name):
		return BadRequest("unixUser %q: want a user name (lowercase letters, digits, _ and -, at most 32)", name)
	case name == "root":
		return BadRequest("unixUser root: a tenant's processes may not run as root (they could read the worker's credentials and every other tenant's processes)")
	}
	return nil
}

// QueueSpec checks a PUT /v1/queues/{name} body.
func QueueSpec(s wire.QueueSpec) error {
	if s.Weight != nil {
		if err := wire.CheckWeight(*s.Weight); err != nil {
			return BadRequest("%v", err)
		}
	}
	for what, a := range map[string]*wire.Amount{"guarantee": s.Guarantee, "limit": s.Limit} {
		if a != nil {
			if err := a.Check(what); err != nil {
				return BadRequest("%v", err)
			}
		}
	}
	return nil
}
