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
//   - a driver holds the credential the master minted for it (EnvToken),
//     valid while the driver runs.
type Access uint8

const (
	// AccessOpen: anyone, unauthenticated (probes).
	AccessOpen Access = iota
	// AccessOperator: operators only.
	AccessOperator
	// AccessApp: operators, and drivers for the apps they registered (a
	// route without {id} creates one, owned by the calling driver).
	AccessApp
	// AccessWorker: operators, and the worker the path's {id} names (a
	// route without {id} registers one, bound to the caller's certificate).
	AccessWorker
	// AccessMaster: operators and masters (a worker's commands, Raft
	// membership).
	AccessMaster
)

func (a Access) String() string {
	switch a {
	case AccessOpen:
		return "anyone"
	case AccessOperator:
		return "operators"
	case AccessApp:
		return "operators; a driver for its own apps"
	case AccessWorker:
		return "operators; a worker as itself"
	case AccessMaster:
		return "operators; masters"
	}
	return "nobody"
}
