package master

import (
	"net/http"

	"github.com/berth-cluster/berth/admission"
	"github.com/berth-cluster/berth/wire"
)

// sharedRoutes serves the shared cluster's routes: queues (tenants may
// read them), tenants and the audit log (operators').
func (m *Master) sharedRoutes(mux *http.ServeMux) {
	api := wire.MasterAPI
	serve(m, mux, api.Queues, nil, func(r *http.Request, _ wire.None) (wire.Queues, error) {
		return query(r.Context(), m, (*core).queuesStatus)
	})
	serve(m, mux, api.PutQueue, admission.QueueSpec, onNamed(m, checkQueueName, func(c *core, name string, spec wire.QueueSpec, r reply[wire.QueueStatus]) {
		c.putQueue(name, spec, r)
	}))
	serve(m, mux, api.DeleteQueue, nil, onNamed(m, checkQueueName, func(c *core, name string, _ wire.None, r reply[wire.None]) {
		c.deleteQueue(name, r)
	}))
	serve(m, mux, api.Tenants, nil, func(r *http.Request, _ wire.None) (wire.Tenants, error) {
		return query(r.Context(), m, (*core).tenantsStatus)
	})
	serve(m, mux, api.CreateTenant, admission.Tenant, onNamed(m, admission.TenantName, func(c *core, name string, spec wire.TenantSpec, r reply[wire.TenantCreated]) {
		c.createTenant(name, spec, r)
	}))
	serve(m, mux, api.DeleteTenant, nil, onNamed(m, admission.TenantName, func(c *core, name string, _ wire.None, r reply[wire.None]) {
		c.deleteTenant(name, r)
	}))
	serve(m, mux, api.AuditLog, nil, m.auditLog)
}

// onNamed is onEntity for a queue's or a tenant's route: the path's {id}
// is a name, checked by check.
func onNamed[T, R any](m *Master, check func(string) error, apply func(c *core, name string, in T, r reply[R])) func(*http.Request, T) (R, error) {
	return func(r *http.Request, in T) (R, error) {
		name := r.PathValue("id")
		if err := check(name); err != nil {
			var zero R
			return zero, err
		}
		return call(r.Context(), m, func(c *core, rp reply[R]) { apply(c, name, in, rp) })
	}
}
