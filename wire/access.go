package wire

// Access says who may call a route. Every route declares one (see
// routes.go); the servers authorize each request from that declaration
// alone, so a new route cannot be left open by forgetting a check.
//
// Who is who (see docs/SECURITY.md):
//   - an operator holds a cli certificate of the cluster's CA or the
//     operator secret, or calls a server in the loopback mode (no secret,
//     no TLS); an operator may call every route;
//   - a master holds a master certificate;
//   - a worker holds a worker certificate, and is bound to the worker ids it
//     registered;
//   - a tenant holds a token an operator made for it: it submits into its
//     queues and manages what it submitted;
//   - a driver holds the credential the master minted for it (EnvToken),
//     valid while the driver runs; it acts for the tenant that submitted it.
type Access uint8

const (
	// AccessOpen: anyone, unauthenticated (probes).
	AccessOpen Access = iota
	// AccessOperator: operators only.
	AccessOperator
	// AccessApp: operators; tenants for their own apps, drivers for the
	// apps they registered (a route without {id} creates one, owned by the
	// caller).
	AccessApp
	// AccessWorker: operators, and the worker the path's {id} names (a
	// route without {id} registers one, bound to the caller's certificate).
	AccessWorker
	// AccessMaster: operators and masters (a worker's commands, Raft
	// membership).
	AccessMaster
	// AccessTenant: operators; tenants for their own drivers, and for
	// what they may see of the cluster (its workers, queues and totals,
	// their own apps and drivers).
	AccessTenant
	// AccessTenantUI: operators; tenants on the web UI's pages and logs
	// of their own apps and drivers. Which app or driver is the tenant's
	// is the UI's to check, not the route's scope: it answers an id that
	// is not the tenant's as it answers one that does not exist, so a
	// page says nothing of other tenants' ids.
	AccessTenantUI
)

func (a Access) String() string {
	switch a {
	case AccessOpen:
		return "anyone"
	case AccessOperator:
		return "operators"
	case AccessApp:
		return "operators; a tenant or a driver for its own apps"
	case AccessWorker:
		return "operators; a worker as itself"
	case AccessMaster:
		return "operators; masters"
	case AccessTenant:
		return "operators; a tenant for its own drivers and its view"
	case AccessTenantUI:
		return "operators; a tenant on its own apps' and drivers' pages"
	}
	return "nobody"
}
