package admission

import "github.com/berth-cluster/berth/wire"

// MaxAppCores bounds an app's maxCores (it may span many workers); MaxGang
// an app's gang.
const (
	MaxAppCores = 1 << 24
	MaxGang     = 10000
)

// App checks an app's description as POST /v1/apps admits it.
func App(d wire.AppDescription) error {
	if len(d.Name) > 256 {
		return BadRequest("name is longer than 256 characters")
	}
	if err := Name("name", d.Name); err != nil {
		return err
	}
	if err := checkCommand(d.Command); err != nil {
		return err
	}
	if err := checkEnv(d.Env); err != nil {
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
	if err := wire.CheckStopAfterDisconnect(d.StopAfterDisconnect); err != nil {
		return BadRequest("%v", err)
	}
	if err := wire.CheckHealthSpec(d.Ports, d.Checks, d.Restart); err != nil {
		return BadRequest("%v", err)
	}
	if err := wire.CheckConstraints(d.Constraints); err != nil {
		return BadRequest("%v", err)
	}
	return checkGang(d)
}

// Driver checks a driver's description as POST /v1/drivers admits it.
func Driver(d wire.DriverDescription) error {
	if err := checkCommand(d.Command); err != nil {
		return err
	}
	if err := checkEnv(d.Env); err != nil {
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
	if err := wire.CheckStopAfterDisconnect(d.StopAfterDisconnect); err != nil {
		return BadRequest("%v", err)
	}
	if err := wire.CheckHealthSpec(d.Ports, d.Checks, d.Restart); err != nil {
		return BadRequest("%v", err)
	}
	if err := wire.CheckConstraints(d.Constraints); err != nil {
		return BadRequest("%v", err)
	}
	return Range("memoryMB", d.MemoryMB, 0, wire.MaxMemoryMB)
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
