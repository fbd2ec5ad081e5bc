package main

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/berth-cluster/berth/wire"
)

// The flags of a process's health (docs/HEALTH.md) and --file, which run
// and submit share: ports by label, checks, a restart policy, and the
// whole description as the API's JSON. What they ask is checked here with
// wire's rules (wire.CheckPortLabels, wire.CheckChecks,
// wire.RestartPolicy.Check), the master's own, so that a mistake is named
// by its flag before anything is sent.

// healthFlags are run's and submit's --file, --port, --check-* and
// --restart-* flags; what names the description --file holds.
func healthFlags(cmd, what string) []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "file", EnvVars: env(cmd, "file"),
			Usage: "read the whole " + what + " from `SPEC.json`, the API's JSON (docs/API.md; - for standard input): unknown fields are refused; the flags given override its values"},
		&cli.StringSliceFlag{Name: "port", EnvVars: env(cmd, "port"),
			Usage: "a port by `LABEL`, given the process from its worker's --port-range: BERTH_PORT_<LABEL> in its environment, {{PORT_<LABEL>}} in its argv; repeat it"},
		repeatedFlag(cmd, "check-http", "check the process with GET http://<its worker's host>:<port LABEL>PATH, which passes on 2xx or 3xx (`LABEL:PATH`, e.g. http:/health; another address: \"address\" in --file); repeat it"),
		&cli.StringSliceFlag{Name: "check-tcp", EnvVars: env(cmd, "check-tcp"),
			Usage: "check that the port `LABEL` accepts a connection; repeat it"},
		repeatedFlag(cmd, "check-exec", "check the process by running `'CMD ARGS...'` in its cgroup with its environment: exit 0 passes; split into words as a shell would (quotes, backslashes), but no shell runs it; repeat it"),
		&cli.DurationFlag{Name: "check-interval", EnvVars: env(cmd, "check-interval"), DefaultText: "10s",
			Usage: "run each check every `D` (100ms to 1h)"},
		&cli.DurationFlag{Name: "check-timeout", EnvVars: env(cmd, "check-timeout"), DefaultText: "2s",
			Usage: "a check not answered within `D` fails (at most the interval)"},
		&cli.IntFlag{Name: "check-failures", EnvVars: env(cmd, "check-failures"), DefaultText: fmt.Sprint(wire.DefaultCheckFailures),
			Usage: "`N` failures in a row of one check make the process unhealthy: its worker kills it (FAILED)"},
		&cli.DurationFlag{Name: "check-start-period", EnvVars: env(cmd, "check-start-period"), DefaultText: "0s",
			Usage: "failures within `D` of the start are not counted (a slow starter)"},
		&cli.IntFlag{Name: "restart-attempts", EnvVars: env(cmd, "restart-attempts"), DefaultText: "the master's --max-executor-retries",
			Usage: "`N` failures allowed within the restart interval; past them, --restart-mode applies"},
		&cli.DurationFlag{Name: "restart-interval", EnvVars: env(cmd, "restart-interval"), DefaultText: "10m",
			Usage: "the window `D` in which failures are counted"},
		&cli.DurationFlag{Name: "restart-delay", EnvVars: env(cmd, "restart-delay"), DefaultText: "0s",
			Usage: "wait at least `D` before replacing a failed process"},
		&cli.StringFlag{Name: "restart-mode", EnvVars: env(cmd, "restart-mode"), DefaultText: string(wire.RestartFail),
			Usage: "past the attempts, `MODE` fail (it ends FAILED) or delay (new processes wait until the oldest failure leaves the interval)"},
	}
}

// checkFlags are the flags that each add checks; timingFlags apply to
// every check; restartFlags make the restart policy.
var (
	checkFlags   = []string{"check-http", "check-tcp", "check-exec"}
	timingFlags  = []string{"check-interval", "check-timeout", "check-failures", "check-start-period"}
	restartFlags = []string{"restart-attempts", "restart-interval", "restart-delay", "restart-mode"}
)

// readHealth sets a description's ports, checks and restart policy (as
// --file gave them, or empty) from the flags given, and checks the
// result. A flag given replaces what the file says of its field: --port
// the ports, the check flags the checks, each --restart-* its field of the
// policy; the timing flags apply to every check, the command line's or
// else the file's.
func readHealth(c *cli.Context, file string, ports *[]string, checks *[]wire.Check, restart **wire.RestartPolicy) error {
	if c.IsSet("port") {
		*ports = c.StringSlice("port")
		if err := wire.CheckPortLabels(*ports); err != nil {
			return fmt.Errorf("invalid value %q for flag --port: %w", strings.Join(*ports, ","), err)
		}
	}
	if isSet(c, checkFlags...) {
		cs, err := checksFromFlags(c, *ports)
		if err != nil {
			return err
		}
		*checks = cs
	}
	if err := applyTiming(c, *checks); err != nil {
		return err
	}
	if err := applyRestart(c, restart); err != nil {
		return err
	}
	if err := wire.CheckHealthSpec(*ports, *checks, *restart); err != nil {
		flags := isSet(c, append(append(append([]string{"port"}, checkFlags...), timingFlags...), restartFlags...)...)
		switch {
		case file != "" && flags:
			return fmt.Errorf("--file %s with the flags --port, --check-* and --restart-* given: %w", file, err)
		case file != "":
			return fmt.Errorf("--file %s: %w", file, err)
		}
		return fmt.Errorf("flags --port, --check-* and --restart-*: %w", err)
	}
	return nil
}

// isSet reports whether any of the flags was given.
func isSet(c *cli.Context, names ...string) bool {
	for _, n := range names {
		if c.IsSet(n) {
			return true
		}
	}
	return false
}

// checksFromFlags makes the checks of --check-http, --check-tcp and
// --check-exec, in that order, each named after its type and port label
// ("http-web", "tcp-admin", "exec"; "-2", "-3" for a name taken), and
// checks each against ports.
func checksFromFlags(c *cli.Context, ports []string) ([]wire.Check, error) {
	type given struct {
		flag, value string
		check       wire.Check
	}
	var all []given
	for _, v := range repeatedValues(c, "check-http") {
		label, path, ok := strings.Cut(v, ":")
		if !ok {
			return nil, fmt.Errorf("invalid value %q for flag --check-http: want LABEL:PATH, e.g. http:/health", v)
		}
		all = append(all, given{"check-http", v, wire.Check{Type: wire.CheckHTTP, Port: label, Path: path}})
	}
	for _, v := range c.StringSlice("check-tcp") {
		all = append(all, given{"check-tcp", v, wire.Check{Type: wire.CheckTCP, Port: v}})
	}
	for _, v := range repeatedValues(c, "check-exec") {
		argv, err := splitCommand(v)
		if err != nil {
			return nil, fmt.Errorf("invalid value %q for flag --check-exec: %w", v, err)
		}
		all = append(all, given{"check-exec", v, wire.Check{Type: wire.CheckExec, Command: argv}})
	}
	taken := map[string]bool{}
	checks := make([]wire.Check, 0, len(all))
	for _, g := range all {
		if g.check.Port != "" {
			// The label's own form first: the name is made of it.
			if err := wire.CheckPortLabels([]string{g.check.Port}); err != nil {
				return nil, fmt.Errorf("invalid value %q for flag --%s: %w", g.value, g.flag, err)
			}
		}
		g.check.Name = checkName(g.check, taken)
		if err := wire.CheckChecks([]wire.Check{g.check}, ports); err != nil {
			if g.check.Port != "" && !slices.Contains(ports, g.check.Port) {
				err = fmt.Errorf("%w (ask for it with --port %s)", err, g.check.Port)
			}
			return nil, fmt.Errorf("invalid value %q for flag --%s: %w", g.value, g.flag, err)
		}
		checks = append(checks, g.check)
	}
	return checks, nil
}

// maxCheckName is the longest check name wire.CheckChecks takes.
const maxCheckName = 32

// checkName is c's default name, its type and port label ("http-web"; an
// exec check: "exec"), with "-2", "-3"... when taken already; it marks the
// name taken.
func checkName(c wire.Check, taken map[string]bool) string {
	base := string(c.Type)
	if c.Port != "" {
		base += "-" + c.Port
	}
	name := base[:min(len(base), maxCheckName)]
	for n := 2; taken[name]; n++ {
		suffix := fmt.Sprintf("-%d", n)
		name = base[:min(len(base), maxCheckName-len(suffix))] + suffix
	}
	taken[name] = true
	return name
}

// applyTiming sets the timing flags given on every check, after checking
// each flag alone against wire's rules (on a check that is otherwise
// valid), then the interval and the timeout together.
func applyTiming(c *cli.Context, checks []wire.Check) error {
	if !isSet(c, timingFlags...) {
		return nil
	}
	if len(checks) == 0 {
		for _, name := range timingFlags {
			if c.IsSet(name) {
				return fmt.Errorf("flag --%s: no check to apply it to; give --check-http, --check-tcp or --check-exec (or checks in --file)", name)
			}
		}
	}
	dur := func(name string) *wire.Duration {
		if !c.IsSet(name) {
			return nil
		}
		d := wire.Duration(c.Duration(name))
		return &d
	}
	interval, timeout, startPeriod := dur("check-interval"), dur("check-timeout"), dur("check-start-period")
	var failures *int
	if c.IsSet("check-failures") {
		n := c.Int("check-failures")
		failures = &n
	}
	shortest, longest := wire.Duration(10*time.Millisecond), wire.Duration(time.Hour)
	alone := []struct {
		name  string
		set   bool
		value string
		probe wire.Check
	}{
		{"check-interval", interval != nil, durText(interval), wire.Check{Interval: interval, Timeout: &shortest}},
		{"check-timeout", timeout != nil, durText(timeout), wire.Check{Interval: &longest, Timeout: timeout}},
		{"check-failures", failures != nil, fmt.Sprint(c.Int("check-failures")), wire.Check{Failures: failures}},
		{"check-start-period", startPeriod != nil, durText(startPeriod), wire.Check{StartPeriod: startPeriod}},
	}
	for _, a := range alone {
		if a.set {
			if err := timingError(a.probe); err != nil {
				return fmt.Errorf("invalid value %s for flag --%s: %w", a.value, a.name, err)
			}
		}
	}
	for i := range checks {
		ck := &checks[i]
		if interval != nil {
			ck.Interval = interval
		}
		if timeout != nil {
			ck.Timeout = timeout
		}
		if failures != nil {
			ck.Failures = failures
		}
		if startPeriod != nil {
			ck.StartPeriod = startPeriod
		}
		err := timingError(*ck)
		switch {
		case err == nil:
		case interval != nil && timeout != nil:
			return fmt.Errorf("flags --check-interval %s and --check-timeout %s: %w", ck.IntervalD(), ck.TimeoutD(), err)
		case interval != nil:
			return fmt.Errorf("invalid value %s for flag --check-interval: check %q: %w; set --check-timeout too", ck.IntervalD(), ck.Name, err)
		case timeout != nil:
			return fmt.Errorf("invalid value %s for flag --check-timeout: check %q: %w; set --check-interval too", ck.TimeoutD(), ck.Name, err)
		}
	}
	return nil
}

// timingError is what wire.CheckChecks says of c's timing: c's type and
// target are replaced by a valid exec check's, and the error is stripped
// of the check's name.
func timingError(c wire.Check) error {
	c.Name, c.Type, c.Port, c.Path, c.Command = "probe", wire.CheckExec, "", "", []string{"true"}
	err := wire.CheckChecks([]wire.Check{c}, nil)
	if inner := errors.Unwrap(err); inner != nil {
		return inner
	}
	return err
}

func durText(d *wire.Duration) string {
	if d == nil {
		return ""
	}
	return d.D().String()
}

// applyRestart sets the fields of the restart policy whose flags were
// given (the policy made when there was none), each checked alone.
func applyRestart(c *cli.Context, restart **wire.RestartPolicy) error {
	if !isSet(c, restartFlags...) {
		return nil
	}
	p := wire.RestartPolicy{}
	if *restart != nil {
		p = **restart
	}
	set := func(name, value string, probe wire.RestartPolicy, apply func()) error {
		if !c.IsSet(name) {
			return nil
		}
		if err := probe.Check(); err != nil {
			return fmt.Errorf("invalid value %s for flag --%s: %w", value, name, err)
		}
		apply()
		return nil
	}
	n := c.Int("restart-attempts")
	interval, delay := wire.Duration(c.Duration("restart-interval")), wire.Duration(c.Duration("restart-delay"))
	mode := wire.RestartMode(c.String("restart-mode"))
	for _, err := range []error{
		set("restart-attempts", fmt.Sprint(n), wire.RestartPolicy{Attempts: &n}, func() { p.Attempts = &n }),
		set("restart-interval", interval.D().String(), wire.RestartPolicy{Interval: &interval}, func() { p.Interval = &interval }),
		set("restart-delay", delay.D().String(), wire.RestartPolicy{Delay: &delay}, func() { p.Delay = &delay }),
		set("restart-mode", fmt.Sprintf("%q", mode), wire.RestartPolicy{Mode: mode}, func() { p.Mode = mode }),
	} {
		if err != nil {
			return err
		}
	}
	*restart = &p
	return nil
}
