package admission

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/berth-cluster/berth/internal/httpx"
	"github.com/berth-cluster/berth/persistence"
	"github.com/berth-cluster/berth/wire"
)

// RestoredState checks a state to restore (a snapshot file) record by
// record, as the API checked each when it was made: a hand-edited file, or
// one of another release, must not hand the master what no request could
// (a gang without coresPerExecutor divided by zero in every leader; a
// tenant whose token hash is "00", whose Unix user is root, or whose
// queue does not exist). persistence.Validate checks the state's shape;
// this checks its contents. The first problem is reported, in the order
// of the records' names, so the same file always gets the same answer.
func RestoredState(s *persistence.State) error {
	queues := map[string]bool{wire.DefaultQueue: true}
	for _, name := range slices.Sorted(maps.Keys(s.Queues)) {
		if err := QueueRecord(s.Queues[name]); err != nil {
			return fmt.Errorf("queue %s: %s", name, reason(err))
		}
		queues[name] = true
	}
	users := unixUsers{} // Unix user → tenant
	for _, name := range slices.Sorted(maps.Keys(s.Tenants)) {
		t := s.Tenants[name]
		if err := TenantRecord(t, queues); err != nil {
			return fmt.Errorf("tenant %s: %s", name, reason(err))
		}
		if other, ok := users[t.UnixUser]; ok && t.UnixUser != "" {
			return fmt.Errorf("tenant %s: unixUser %s is tenant %s's too: two tenants of one Unix user can signal and read each other", name, t.UnixUser, other)
		}
		users[t.UnixUser] = name
	}
	for _, id := range slices.Sorted(maps.Keys(s.Apps)) {
		if rec := s.Apps[id]; !rec.Finished() {
			if err := App(rec.Desc); err != nil {
				return fmt.Errorf("app %s: %s", id, reason(err))
			}
			if err := knownQueue(rec.Desc.Queue, queues); err != nil {
				return fmt.Errorf("app %s: %s", id, reason(err))
			}
			if err := users.run(rec.Tenant, rec.UnixUser); err != nil {
				return fmt.Errorf("app %s: %w", id, err)
			}
		}
	}
	for _, id := range slices.Sorted(maps.Keys(s.Drivers)) {
		if rec := s.Drivers[id]; !rec.Finished() {
			if err := Driver(rec.Desc); err != nil {
				return fmt.Errorf("driver %s: %s", id, reason(err))
			}
			if err := knownQueue(rec.Desc.Queue, queues); err != nil {
				return fmt.Errorf("driver %s: %s", id, reason(err))
			}
			if err := users.run(rec.Tenant, rec.UnixUser); err != nil {
				return fmt.Errorf("driver %s: %w", id, err)
			}
		}
	}
	return nil
}

// unixUsers maps each Unix user of a state to the one tenant it is.
type unixUsers map[string]string

// run checks that a record of tenant may run as user: a user the API
// would give a tenant (not root), and no other tenant's, live or deleted
// (a deleted tenant's work runs on as the user it was submitted with).
func (u unixUsers) run(tenant, user string) error {
	if user == "" {
		return nil
	}
	if err := UnixUser(user); err != nil {
		return fmt.Errorf("unixUser: %s", reason(err))
	}
	if other, ok := u[user]; ok && other != tenant {
		return fmt.Errorf("unixUser %s is tenant %s's, not tenant %s's: two tenants of one Unix user can signal and read each other", user, other, tenant)
	}
	u[user] = tenant
	return nil
}

// reason is what err says: a check's message without its status.
func reason(err error) string {
	var se *httpx.StatusError
	if errors.As(err, &se) {
		return se.Message
	}
	return err.Error()
}

func knownQueue(q string, queues map[string]bool) error {
	if q != "" && !queues[q] {
		return BadRequest("queue %q: no such queue in the state", q)
	}
	return nil
}

// QueueRecord checks a queue as PUT /v1/queues/{name} would have made it.
func QueueRecord(r *persistence.QueueRecord) error {
	if err := wire.CheckQueueName("queue", r.Name); err != nil {
		return BadRequest("%v", err)
	}
	w, g := r.Weight, r.Guarantee
	if err := QueueSpec(wire.QueueSpec{Weight: &w, Guarantee: &g, Limit: r.Limit}); err != nil {
		return err
	}
	return GuaranteeWithinLimit(r)
}

// GuaranteeWithinLimit refuses a queue whose guarantee is above its limit.
func GuaranteeWithinLimit(r *persistence.QueueRecord) error {
	if r.Limit == nil {
		return nil
	}
	for res, v := range r.Guarantee.Resources {
		if l, ok := r.Limit.Resources[res]; ok && l < v {
			return BadRequest("queue %s: guarantee %s=%v above its limit %v", r.Name, res, v, l)
		}
	}
	if r.Limit.Cores > 0 && r.Guarantee.Cores > r.Limit.Cores || r.Limit.MemoryMB > 0 && r.Guarantee.MemoryMB > r.Limit.MemoryMB {
		return BadRequest("queue %s: its guarantee is above its limit", r.Name)
	}
	return nil
}

// TenantRecord checks a tenant as POST /v1/tenants/{name} would have made
// it, queues being the names of the queues that exist.
func TenantRecord(t *persistence.TenantRecord, queues map[string]bool) error {
	if err := TenantName(t.Name); err != nil {
		return err
	}
	if err := Tenant(wire.TenantSpec{Queues: t.Queues, UnixUser: t.UnixUser, DefaultQueue: t.DefaultQueue}); err != nil {
		return err
	}
	for _, q := range t.Queues {
		if !queues[q] {
			return BadRequest("queues: no queue %q in the state", q)
		}
	}
	if !tokenHash.MatchString(t.TokenHash) {
		return BadRequest("tokenHash: want the SHA-256 of its token, 64 lowercase hex digits")
	}
	return nil
}

// UnixUserFree refuses user for tenant name when another tenant has it.
func UnixUserFree(name, user string, tenants map[string]*persistence.TenantRecord) error {
	if user == "" {
		return nil
	}
	for _, other := range slices.Sorted(maps.Keys(tenants)) {
		if other != name && tenants[other].UnixUser == user {
			return BadRequest("unixUser %s is tenant %s's: two tenants of one Unix user could signal each other's processes and read their environments", user, other)
		}
	}
	return nil
}
