package worker

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/berth-cluster/berth/wire"
)

// driversDir is the work directory's subdirectory for drivers, hence not a
// valid app id (the app's executors would share it).
const driversDir = "drivers"

// The checks of the commands' bodies: a failed check is a 400 and nothing
// happens. Ids become directory names, so they are checked strictly.

func checkAppID(id string) error {
	if err := checkID("appId", id); err != nil {
		return err
	}
	if id == driversDir {
		return fmt.Errorf("appId %q is reserved", id)
	}
	return nil
}

func checkExecutorID(id int) error {
	if id < 0 {
		return fmt.Errorf("executorId %d is negative", id)
	}
	return nil
}

func checkResources(cores, memoryMB int) error {
	if cores < 0 || cores > wire.MaxCores {
		return fmt.Errorf("cores %d: want 0 to %d", cores, wire.MaxCores)
	}
	if memoryMB < 0 || memoryMB > wire.MaxMemoryMB {
		return fmt.Errorf("memoryMB %d: want 0 to %d", memoryMB, wire.MaxMemoryMB)
	}
	return nil
}

func checkCommand(argv []string) error {
	if len(argv) == 0 {
		return errors.New("command is empty")
	}
	if len(argv) > wire.MaxCommandArgs {
		return fmt.Errorf("command has %d arguments, more than %d", len(argv), wire.MaxCommandArgs)
	}
	if argv[0] == "" {
		return errors.New("command[0], the program, is empty")
	}
	for i, a := range argv {
		if strings.IndexByte(a, 0) >= 0 {
			return fmt.Errorf("command[%d] contains a NUL byte", i)
		}
	}
	return nil
}

func checkEnv(env map[string]string) error {
	for k, v := range env {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return fmt.Errorf("env name %q: must be non-empty, without '=' or NUL", k)
		}
		if strings.IndexByte(v, 0) >= 0 {
			return fmt.Errorf("env %s: the value contains a NUL byte", k)
		}
	}
	return nil
}

// validateProcess checks what a launch runs: its cores, memory, command and
// env.
func validateProcess(p wire.Process) error {
	var user error
	if p.User != "" && !unixUser.MatchString(p.User) {
		user = fmt.Errorf("user %q is not a user name", p.User)
	}
	return errors.Join(checkResources(p.Cores, p.MemoryMB), checkCommand(p.Command), checkEnv(p.Env), user)
}

// unixUser is what a tenant's Unix user may be called (as the master takes it).
var unixUser = regexp.MustCompile(`^[a-z_][a-z0-9_-]{0,31}$`)

func validateLaunchExecutor(c *wire.LaunchExecutor) error {
	return errors.Join(checkAppID(c.AppID), checkExecutorID(c.ExecutorID), validateProcess(c.Process))
}

func validateLaunchDriver(c *wire.LaunchDriver) error {
	return errors.Join(checkID("driverId", c.DriverID), validateProcess(c.Process))
}

func validateKillExecutor(c *wire.KillExecutor) error {
	var grace error
	if c.GraceMs < 0 || c.GraceMs > maxKillGrace.Milliseconds() {
		grace = fmt.Errorf("graceMs %d: want 0 to %d", c.GraceMs, maxKillGrace.Milliseconds())
	}
	return errors.Join(checkAppID(c.AppID), checkExecutorID(c.ExecutorID), grace)
}

// maxKillGrace bounds the grace a master may ask for one kill.
const maxKillGrace = wire.MaxKillGrace

func validateKillDriver(c *wire.KillDriver) error {
	return checkID("driverId", c.DriverID)
}

func validateAppFinished(c *wire.ApplicationFinished) error {
	return checkAppID(c.AppID)
}

func validateReconnect(c *wire.Reconnect) error {
	if c.Master == "" {
		return nil // register again with whichever master leads
	}
	if normalizeMaster(c.Master) == "" {
		return fmt.Errorf("master %q is not an API base URL like http://host:7077", c.Master)
	}
	return nil
}
