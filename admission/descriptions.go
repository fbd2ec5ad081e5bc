package admission

import (
	"net/url"

	"github.com/berth-cluster/berth/internal/termtext"
	"github.com/berth-cluster/berth/wire"
)

// MaxAppCores bounds an app's maxCores (it may span many workers); MaxGang
// an app's gang.
const (
	MaxAppCores = 1 << 24
	MaxGang     = 10000
)

// App checks an app's description as POST /v1/apps admits it.
func App(d wire.AppDescription) error {
	if err := checkProcess(d.Name, d.Command, d.Env); err != nil {
		return err
	}
	if err := Range("maxCores", d.MaxCores, 0, MaxAppCores); err != nil {
		return err
	}
	if err := Range("coresPerExecutor", d.CoresPerExecutor, 0, wire.MaxCores); err != nil {
		return err
	}
	if err := Range("memoryPerExecutorMB", d.MemoryPerExecutorMB, 0, wire.MaxMemoryMB); err != nil {
		return err
	}
	if err := checkPlacementClass(d.Queue, d.Priority); err != nil {
		return err
	}
	if d.MaxCores > 0 && d.CoresPerExecutor > d.MaxCores {
		return BadRequest("coresPerExecutor %d is more than maxCores %d: no executor could ever start", d.CoresPerExecutor, d.MaxCores)
	}
	if d.InitialExecutorLimit != nil {
		if err := Range("initialExecutorLimit", *d.InitialExecutorLimit, 0, wire.MaxCores*1024); err != nil {
			return err
		}
	}
	if _, err := d.ResourcesPerExecutor.Milli(); err != nil {
		return BadRequest("resourcesPerExecutor: %v", err)
	}
	if err := checkProcessSpec(d.ProcessSpec); err != nil {
		return err
	}
	if err := checkUIURL(d.UIURL); err != nil {
		return err
	}
	return checkGang(d)
}

// checkUIURL refuses an app's UI address that is not an http or https
// URL with a host: berth's UI links to it, so it must not be a
// javascript: or data: URL, nor text a terminal acts on.
func checkUIURL(s string) error {
	if s == "" {
		return nil
	}
	if len(s) > wire.MaxUIURLBytes || !termtext.Safe(s) {
		return BadRequest("uiUrl: at most %d bytes, no control characters", wire.MaxUIURLBytes)
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return BadRequest("uiUrl %q: want an http:// or https:// URL with a host, e.g. http://10.0.0.5:4040", s)
	}
	return nil
}

// Driver checks a driver's description as POST /v1/drivers admits it.
func Driver(d wire.DriverDescription) error {
	if err := checkProcess(d.Name, d.Command, d.Env); err != nil {
		return err
	}
	if err := Range("cores", d.Cores, 0, wire.MaxCores); err != nil {
		return err
	}
	if _, err := d.Resources.Milli(); err != nil {
		return BadRequest("resources: %v", err)
	}
	if err := checkPlacementClass(d.Queue, d.Priority); err != nil {
		return err
	}
	if err := checkProcessSpec(d.ProcessSpec); err != nil {
		return err
	}
	return Range("memoryMB", d.MemoryMB, 0, wire.MaxMemoryMB)
}

// checkProcess checks what every description starts with: its name, its
// command and its environment.
func checkProcess(name string, command []string, env map[string]string) error {
	if len(name) > 256 {
		return BadRequest("name is longer than 256 characters")
	}
	if err := Name("name", name); err != nil {
		return err
	}
	if err := checkCommand(command); err != nil {
		return err
	}
	return checkEnv(env)
}

// checkProcessSpec checks what apps and drivers are described by alike
// beyond their queue and priority (checkPlacementClass, which each
// description checks among its sizes): when they stop out of touch, their
// ports, checks and restart policy, their constraints.
func checkProcessSpec(s wire.ProcessSpec) error {
	if err := wire.CheckStopAfterDisconnect(s.StopAfterDisconnect); err != nil {
		return BadRequest("%v", err)
	}
	if err := wire.CheckHealthSpec(s.Ports, s.Checks, s.Restart); err != nil {
		return BadRequest("%v", err)
	}
	if err := wire.CheckConstraints(s.Constraints); err != nil {
		return BadRequest("%v", err)
	}
	return nil
}

// checkGang checks an app's gang: fixed-size executors (the gang is N
// executors, each of CoresPerExecutor), within its maxCores and initial
// executor limit.
func checkGang(d wire.AppDescription) error {
	switch {
	case d.Gang < 0 || d.Gang > MaxGang:
		return BadRequest("gang %d: want 0 (none) to %d executors", d.Gang, MaxGang)
	case d.Gang == 0 && d.GangRestart:
		return BadRequest("gangRestart without a gang: give gang N too")
	case d.Gang == 0:
		return nil
	case d.CoresPerExecutor <= 0:
		return BadRequest("gang %d needs coresPerExecutor: a gang is N executors of a fixed size", d.Gang)
	case d.MaxCores > 0 && d.MaxCores < d.Gang*d.CoresPerExecutor:
		return BadRequest("gang %d of %d cores each needs maxCores ≥ %d (it is %d)", d.Gang, d.CoresPerExecutor, d.Gang*d.CoresPerExecutor, d.MaxCores)
	case d.InitialExecutorLimit != nil && *d.InitialExecutorLimit < d.Gang:
		return BadRequest("gang %d with initialExecutorLimit %d: the gang could never start", d.Gang, *d.InitialExecutorLimit)
	}
	return nil
}
