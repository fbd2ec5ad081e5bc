package wire

import (
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strings"
	"time"
)

// Healthy processes (docs/HEALTH.md): the ports a process is given, the
// checks its worker runs against it, and the restart policy that counts
// its failures. Declared once here for the master, the worker and the CLI.

// Ports: a process asks for ports by label; its worker's range gives each
// a port of its own while the process runs. The process finds it in
// BERTH_PORT_<LABEL> and in its argv as {{PORT_<LABEL>}}.
const (
	MaxPorts       = 16
	maxPortLabel   = 32
	PortEnvPrefix  = "BERTH_PORT_"
	portPlaceStart = "{{PORT_"
)

// DefaultPortRange is a worker's --port-range when it gives none.
var DefaultPortRange = PortRange{First: 20000, Last: 32000}

// PortRange is the ports a worker hands out, First to Last inclusive.
type PortRange struct {
	First int `json:"first"`
	Last  int `json:"last"`
}

// Size is how many ports r holds.
func (r PortRange) Size() int { return r.Last - r.First + 1 }

// Contains reports whether port is in r.
func (r PortRange) Contains(port int) bool { return port >= r.First && port <= r.Last }

// Check checks r: within 1024-65535 (no privileged port), First ≤ Last.
func (r PortRange) Check() error {
	if r.First < 1024 || r.Last > 65535 || r.First > r.Last {
		return fmt.Errorf("port range %d-%d: want FIRST-LAST within 1024-65535, FIRST ≤ LAST", r.First, r.Last)
	}
	return nil
}

// ParsePortRange reads "20000-32000".
func ParsePortRange(s string) (PortRange, error) {
	first, last, ok := strings.Cut(s, "-")
	var r PortRange
	if _, err := fmt.Sscanf(first+" "+last, "%d %d", &r.First, &r.Last); !ok || err != nil {
		return r, fmt.Errorf("port range %q: want FIRST-LAST, e.g. 20000-32000", clip(s))
	}
	return r, r.Check()
}

// PortEnv is the variable that holds the port of label.
func PortEnv(label string) string { return PortEnvPrefix + strings.ToUpper(label) }

// PortPlaceholder is what stands for the port of label in an argv.
func PortPlaceholder(label string) string { return portPlaceStart + strings.ToUpper(label) + "}}" }

// CheckPortLabels checks a description's ports: at most MaxPorts labels,
// each a lowercase letter then lowercase letters, digits or _, at most 32,
// none twice.
func CheckPortLabels(labels []string) error {
	if len(labels) > MaxPorts {
		return fmt.Errorf("ports: %d labels, at most %d", len(labels), MaxPorts)
	}
	seen := map[string]bool{}
	for _, l := range labels {
		if !portLabel(l) {
			return fmt.Errorf("ports: label %q: want a lowercase letter, then lowercase letters, digits or _, at most %d", clip(l), maxPortLabel)
		}
		if seen[l] {
			return fmt.Errorf("ports: label %q twice", clip(l))
		}
		seen[l] = true
	}
	return nil
}

func portLabel(l string) bool {
	if l == "" || len(l) > maxPortLabel || l[0] < 'a' || l[0] > 'z' {
		return false
	}
	for _, r := range l {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_') {
			return false
		}
	}
	return true
}

// CheckType is how a check looks at its process.
type CheckType string

const (
	CheckHTTP CheckType = "http" // GET http://127.0.0.1:PORT/PATH answers 2xx or 3xx
	CheckTCP  CheckType = "tcp"  // a connection to 127.0.0.1:PORT is accepted
	CheckExec CheckType = "exec" // a command in the process's cgroup, with its environment, exits 0
)

// Check is one health check of a process, run by its worker.
type Check struct {
	Name string    `json:"name"`
	Type CheckType `json:"type"`
	Port string    `json:"port,omitempty"` // http, tcp: the label of one of the process's ports
	// Address is the host an http or tcp check dials: the worker's
	// advertised host (the process's BERTH_HOST) by default; 127.0.0.1
	// for a service that listens on loopback only.
	Address string   `json:"address,omitempty"`
	Path    string   `json:"path,omitempty"`    // http: from "/"; default "/"
	Command []string `json:"command,omitempty"` // exec
	// Interval between two checks (default 10s), Timeout of one (default
	// 2s, at most the interval), Failures in a row that make the process
	// unhealthy (default 3); StartPeriod: failures before it ends do not
	// count (default 0).
	Interval    *Duration `json:"interval,omitempty"`
	Timeout     *Duration `json:"timeout,omitempty"`
	Failures    *int      `json:"failures,omitempty"`
	StartPeriod *Duration `json:"startPeriod,omitempty"`
}

// Check defaults.
const (
	DefaultCheckInterval = 10 * time.Second
	DefaultCheckTimeout  = 2 * time.Second
	DefaultCheckFailures = 3
	MaxChecks            = 8
	// CheckOutputKept: what an unhealthy process's message quotes of the
	// failed check's answer or output.
	CheckOutputKept = 200
)

// IntervalD, TimeoutD, FailuresN and StartPeriodD are c's settings, the
// defaults filled in.
func (c Check) IntervalD() time.Duration { return durOr(c.Interval, DefaultCheckInterval) }
func (c Check) TimeoutD() time.Duration  { return durOr(c.Timeout, DefaultCheckTimeout) }
func (c Check) StartPeriodD() time.Duration {
	return durOr(c.StartPeriod, 0)
}
func (c Check) FailuresN() int {
	if c.Failures == nil {
		return DefaultCheckFailures
	}
	return *c.Failures
}

func durOr(d *Duration, def time.Duration) time.Duration {
	if d == nil {
		return def
	}
	return d.D()
}

// CheckChecks checks a description's checks against its port labels.
func CheckChecks(checks []Check, ports []string) error {
	if len(checks) > MaxChecks {
		return fmt.Errorf("checks: %d, at most %d", len(checks), MaxChecks)
	}
	names := map[string]bool{}
	for i, c := range checks {
		where := fmt.Sprintf("checks[%d]", i)
		if !portLabel(strings.ReplaceAll(c.Name, "-", "_")) {
			return fmt.Errorf("%s: name %q: want a lowercase letter, then lowercase letters, digits, - or _, at most %d", where, clip(c.Name), maxPortLabel)
		}
		where = fmt.Sprintf("check %q", clip(c.Name))
		if names[c.Name] {
			return fmt.Errorf("%s: the name twice", where)
		}
		names[c.Name] = true
		if err := checkTarget(c, ports); err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
		if err := checkTiming(c); err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
	}
	return nil
}

func checkTarget(c Check, ports []string) error {
	switch c.Type {
	case CheckHTTP, CheckTCP:
		if !containsLabel(ports, c.Port) {
			return fmt.Errorf("port %q is not one of the process's ports %v", clip(c.Port), ports)
		}
		if len(c.Command) > 0 {
			return fmt.Errorf("a command is for exec checks")
		}
		if c.Type == CheckTCP && c.Path != "" {
			return fmt.Errorf("a path is for http checks")
		}
		if c.Address != "" && !checkHost(c.Address) {
			return fmt.Errorf("address %q: want a host name or an IP address, without a port", clip(c.Address))
		}
		if c.Type == CheckHTTP && c.Path != "" {
			if u, err := url.Parse(c.Path); err != nil || !strings.HasPrefix(c.Path, "/") || u.Host != "" || len(c.Path) > 1024 {
				return fmt.Errorf("path %q: want an absolute path such as /health, at most 1024 bytes", clip(c.Path))
			}
		}
	case CheckExec:
		if len(c.Command) == 0 || c.Command[0] == "" || len(c.Command) > 64 {
			return fmt.Errorf("an exec check needs a command (at most 64 arguments)")
		}
		if c.Port != "" || c.Path != "" || c.Address != "" {
			return fmt.Errorf("port, path and address are for http and tcp checks")
		}
	default:
		return fmt.Errorf("type %q: want http, tcp or exec", clip(string(c.Type)))
	}
	return nil
}

func checkTiming(c Check) error {
	interval, timeout := c.IntervalD(), c.TimeoutD()
	switch {
	case interval < 100*time.Millisecond || interval > time.Hour:
		return fmt.Errorf("interval %s: want from 100ms to 1h", interval)
	case timeout < 10*time.Millisecond || timeout > interval:
		return fmt.Errorf("timeout %s: want from 10ms to the interval (%s)", timeout, interval)
	case c.FailuresN() < 1 || c.FailuresN() > 100:
		return fmt.Errorf("failures %d: want 1 to 100", c.FailuresN())
	case c.StartPeriodD() < 0 || c.StartPeriodD() > 24*time.Hour:
		return fmt.Errorf("startPeriod %s: want from 0 to 24h", c.StartPeriodD())
	}
	return nil
}

func containsLabel(labels []string, l string) bool {
	for _, x := range labels {
		if x == l {
			return true
		}
	}
	return false
}

// Health is what a checked process's checks say of it; "" for a process
// without checks.
type Health string

const (
	HealthStarting  Health = "starting"  // no check has passed yet
	HealthHealthy   Health = "healthy"   // a check passed, and none has failed its count since
	HealthUnhealthy Health = "unhealthy" // a check failed its count: the worker killed it (final)
)

// RestartMode is what an app's restart policy does once its attempts are
// spent within the interval.
type RestartMode string

const (
	RestartFail  RestartMode = "fail"  // the app (or driver) ends FAILED
	RestartDelay RestartMode = "delay" // new executors wait until the interval's oldest failure is out of it
)

// RestartPolicy is how many failures an app's executors (or a supervised
// driver's runs) may have within Interval (Nomad's restart block): past
// Attempts, Mode says what happens; Delay is the least wait before a
// replacement. Without one, an app ends FAILED after the master's
// --max-executor-retries failures in a row with none running stably.
type RestartPolicy struct {
	Attempts *int        `json:"attempts,omitempty"` // default: the master's --max-executor-retries
	Interval *Duration   `json:"interval,omitempty"` // default 10m
	Delay    *Duration   `json:"delay,omitempty"`    // default 0
	Mode     RestartMode `json:"mode,omitempty"`     // default fail
}

// DefaultRestartInterval is a restart policy's interval when it sets none.
const DefaultRestartInterval = 10 * time.Minute

// IntervalD and DelayD are p's settings, the defaults filled in.
func (p RestartPolicy) IntervalD() time.Duration { return durOr(p.Interval, DefaultRestartInterval) }
func (p RestartPolicy) DelayD() time.Duration    { return durOr(p.Delay, 0) }

// ModeOr is p's mode, fail when unset.
func (p RestartPolicy) ModeOr() RestartMode {
	if p.Mode == "" {
		return RestartFail
	}
	return p.Mode
}

// AttemptsOr is p's attempts, def when unset.
func (p RestartPolicy) AttemptsOr(def int) int {
	if p.Attempts == nil {
		return def
	}
	return *p.Attempts
}

// Check checks p.
func (p RestartPolicy) Check() error {
	switch {
	case p.Attempts != nil && (*p.Attempts < 0 || *p.Attempts > 10000):
		return fmt.Errorf("restart: attempts %d: want 0 to 10000", *p.Attempts)
	case p.IntervalD() < time.Second || p.IntervalD() > 30*24*time.Hour:
		return fmt.Errorf("restart: interval %s: want from 1s to 30 days", p.IntervalD())
	case p.DelayD() < 0 || p.DelayD() > time.Hour:
		return fmt.Errorf("restart: delay %s: want from 0 to 1h", p.DelayD())
	case p.ModeOr() != RestartFail && p.ModeOr() != RestartDelay:
		return fmt.Errorf("restart: mode %q: want fail or delay", clip(string(p.Mode)))
	}
	return nil
}

// CheckHealthSpec checks what a description asks of ports, checks and
// restarts.
func CheckHealthSpec(ports []string, checks []Check, restart *RestartPolicy) error {
	if err := CheckPortLabels(ports); err != nil {
		return err
	}
	if err := CheckChecks(checks, ports); err != nil {
		return err
	}
	if restart != nil {
		return restart.Check()
	}
	return nil
}

// Verdict is what a failure at now does under p, given the failures
// before it (oldest first) and the attempts p allows (its default filled
// in): the failures within p's interval, this one included, to keep for
// the next; whether the app or driver ends (mode fail); and until when its
// next process waits (zero: no wait).
func (p RestartPolicy) Verdict(attempts int, failures []time.Time, now time.Time) (kept []time.Time, fail bool, waitUntil time.Time) {
	window := p.IntervalD()
	for _, t := range failures {
		if now.Sub(t) < window {
			kept = append(kept, t)
		}
	}
	kept = append(kept, now)
	if d := p.DelayD(); d > 0 {
		waitUntil = now.Add(d)
	}
	if len(kept) <= attempts {
		return kept, false, waitUntil
	}
	if p.ModeOr() == RestartFail {
		return kept, true, waitUntil
	}
	// Until only attempts failures are left in the interval: the oldest
	// beyond them leaves it then.
	if until := kept[len(kept)-attempts-1].Add(window); until.After(waitUntil) {
		waitUntil = until
	}
	return kept, false, waitUntil
}

// checkHost reports whether s is an IP address or a host name (RFC 1123
// labels), as a check's address must be.
func checkHost(s string) bool {
	if net.ParseIP(s) != nil {
		return true
	}
	return len(s) <= 253 && hostName.MatchString(s)
}

var hostName = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$`)
