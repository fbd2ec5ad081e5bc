package master

import (
	"net/http"

	"github.com/berth-cluster/berth/admission"
	"github.com/berth-cluster/berth/internal/httpx"
	"github.com/berth-cluster/berth/wire"
)

// Caps bound what a caller can make the master hold: records that stay
// until they end (active apps and drivers), the bytes each carries (its
// command and environment) and the streams each app keeps open. Each is a
// flag; reaching one is a 429 (limit_reached) that names it. Without them,
// 30 drivers that can never be placed, each with a 0.95 MB environment,
// took a master from 61 MB to 460 MB for as long as they waited.

// Defaults of the caps.
const (
	DefaultMaxActiveApps      = 10000
	DefaultMaxActiveDrivers   = 1000
	DefaultMaxSubmissionBytes = 64 << 10
	DefaultMaxStreamsPerApp   = 16
	// DefaultMaxTenantWritesPerSecond: a tenant's changes a second
	// (audit_budget.go).
	DefaultMaxTenantWritesPerSecond = 20
)

// limitReached is the 429 of a cap; flag names the setting that raises it.
func limitReached(flag string, format string, args ...any) error {
	err := httpx.Coded(http.StatusTooManyRequests, wire.CodeLimitReached, format, args...)
	err.Message += " (" + flag + ")"
	return err
}

// submissionSize is what a submission's command, environment and exec
// checks weigh: their bytes, as the processes' argv and environ would hold
// them (a check's command is a process too), plus the checks' names and
// paths. The rest of a description is bounded field by field.
func submissionSize(argv []string, env map[string]string, checks []wire.Check) int {
	n := 0
	for _, a := range argv {
		n += len(a) + 1
	}
	for k, v := range env {
		n += len(k) + len(v) + 2
	}
	for _, ch := range checks {
		n += len(ch.Name) + len(ch.Path) + len(ch.Port)
		for _, a := range ch.Command {
			n += len(a) + 1
		}
	}
	return n
}

// checkSubmissionSize refuses a submission heavier than the cap.
func (c Config) checkSubmissionSize(argv []string, env map[string]string, checks []wire.Check) error {
	if n := submissionSize(argv, env, checks); n > c.MaxSubmissionBytes {
		return limitReached("--max-submission-bytes", "the command, environment and checks take %d bytes, more than the cap of %d", n, c.MaxSubmissionBytes)
	}
	return nil
}

// checkAppSubmission and checkDriverSubmission check a submission before
// it reaches the loop: valid (400) and within the size cap (429).
func (c Config) checkAppSubmission(d wire.AppDescription) error {
	if err := admission.App(d); err != nil {
		return err
	}
	return c.checkSubmissionSize(d.Command, d.Env, d.Checks)
}

func (c Config) checkDriverSubmission(d wire.DriverDescription) error {
	if err := admission.Driver(d); err != nil {
		return err
	}
	return c.checkSubmissionSize(d.Command, d.Env, d.Checks)
}

// roomFor refuses a submission of kind past its cap.
func (c *core) roomFor(kind keyKind) error {
	if kind == keyDriver {
		return c.roomForDriver()
	}
	return c.roomForApp()
}

// roomForApp refuses a new app when the active ones, with those whose
// registration is being written, reach the cap.
func (c *core) roomForApp() error {
	if n := len(c.apps) + c.registering.apps; n >= c.cfg.MaxActiveApps {
		return limitReached("--max-active-apps", "%d apps are active, the cap; retry once some have ended", n)
	}
	return nil
}

// roomForDriver is roomForApp for drivers.
func (c *core) roomForDriver() error {
	if n := len(c.drivers) + c.registering.drivers; n >= c.cfg.MaxActiveDrivers {
		return limitReached("--max-active-drivers", "%d drivers are active, the cap; retry once some have ended", n)
	}
	return nil
}

// roomForStream refuses another event stream on a when it has the cap.
func (c *core) roomForStream(a *appInfo) error {
	if n := len(a.subs); n >= c.cfg.MaxStreamsPerApp {
		return limitReached("--max-streams-per-app", "app %s has %d event streams open, the cap", a.rec.ID, n)
	}
	return nil
}

// inFlight counts the registrations written but not yet answered, which
// the caps count as active, and a queue's deletion and a tenant's
// re-creation as held (submitting).
type inFlight struct {
	apps, drivers int
	queues        counts // by the queue they go into
	tenants       counts // by the tenant that made them
}

// counts is a number per name; names at zero are not kept.
type counts map[string]int

func (n *counts) add(name string, d int) {
	if *n == nil {
		*n = counts{}
	}
	if (*n)[name] += d; (*n)[name] == 0 {
		delete(*n, name)
	}
}

// submitting counts a submission into queue by tenant ("": the operator's)
// as in flight until r is called. Without it, a queue deleted while a
// registration into it was written left the app waiting in no queue for
// ever, and a tenant made again while one was written got the old
// tenant's app, running as the old tenant's Unix user.
func (f *inFlight) submitting(queue, tenant string, r reply[wire.Submitted]) reply[wire.Submitted] {
	f.queues.add(queue, 1)
	f.tenants.add(tenant, 1)
	return func(v wire.Submitted, err error) {
		f.queues.add(queue, -1)
		f.tenants.add(tenant, -1)
		r(v, err)
	}
}
