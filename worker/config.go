package worker

import (
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/berth-cluster/berth/internal/httpx"
	"github.com/berth-cluster/berth/security"
	"github.com/berth-cluster/berth/wire"
)

// Defaults of the Config fields left zero.
const (
	DefaultHost                = "127.0.0.1"
	DefaultWorkDir             = "work"
	DefaultKillGrace           = 5 * time.Second
	DefaultRestartMin          = time.Second
	DefaultRestartMax          = 60 * time.Second
	DefaultRegisterBackoff     = 4 * time.Second
	DefaultRequestTimeout      = 5 * time.Second
	DefaultShutdownReport      = 3 * time.Second
	DefaultHeartbeatEvery      = 15 * time.Second   // when the master does not say
	DefaultCleanupTTL          = 7 * 24 * time.Hour // Spark's appDataTtl
	DefaultCleanupInterval     = 30 * time.Minute   // Spark's cleanup interval
	DefaultLogMaxSize          = 10 << 20           // bytes per log file, as Nomad's
	DefaultMinFreeDiskMB       = 64                 // a new process's first logs, with room to spare
	DefaultLogMaxFiles         = 9                  // rolled files kept: 100 MiB a stream
	reservedMemoryMB           = 1024               // left to the OS, as Spark does
	minDefaultMemoryMB         = 1024
	maxFinishedProcsRemembered = 1000
)

// Config is what a worker is started with. Every field mirrors a flag of
// cmd/worker (named in its comment); zero values take the defaults.
type Config struct {
	// Masters are the API base URLs of the masters (--master), e.g.
	// http://127.0.0.1:7077 (wire.ParseMasterURL's rule). The worker
	// finds the leader among them.
	Masters []string
	// Secret is the cluster's shared secret (--secret). Empty disables
	// authentication, and then the worker may only bind a loopback host.
	Secret string
	// TLS, when set, is the worker's certificate and the cluster's CA
	// (--tls-*-file): its API is TLS, it takes commands only from master
	// certificates, and its id is its certificate's name.
	TLS *security.TLS
	// Host is the address the API listens on (--host), default 127.0.0.1.
	Host string
	// AdvertiseHost is the host the worker gives the master and its children
	// (--advertise-host). Empty: Host, or the machine's hostname when Host is
	// a wildcard address (0.0.0.0, ::).
	AdvertiseHost string
	// Port of the API (--port); 0 picks a free port.
	Port int
	// ID of the worker (--id); empty: worker-YYYYMMDDhhmmss-host-port.
	ID string
	// Cores offered to the master (--cores); 0: runtime.NumCPU().
	Cores int
	// MemoryMB offered to the master (--memory); 0: the machine's memory
	// minus 1 GiB, at least 1 GiB.
	MemoryMB int
	// Resources: the custom resources offered, name → addresses
	// (--resource, parsed by ParseResources).
	Resources map[string][]string
	// Labels: what the worker says of itself for placement constraints
	// (--label KEY=VALUE).
	Labels map[string]string
	// PortRange is the ports the master hands this worker's processes
	// (--port-range); zero: a block of 1000 of wire.DefaultPortRange of
	// its own on this host (hostslot.go).
	PortRange wire.PortRange
	// DrainDeadline, when positive, makes SIGTERM drain the worker first
	// (--drain-deadline): the master places nothing new here and what runs
	// has this long to end on its own before it is killed (and replaced
	// elsewhere). Zero: SIGTERM kills at once (after KillGrace).
	DrainDeadline time.Duration

	// PidsLimit bounds the processes of each executor and driver (its
	// cgroup's pids.max; --pids-limit), default 4096.
	PidsLimit int

	// MaxConnections bounds the API's open connections (--max-connections);
	// 0: three quarters of the file descriptor limit.
	MaxConnections int

	// LogMaxSize rolls each process's stdout and stderr once it would pass
	// this many bytes (--log-max-size); 0: DefaultLogMaxSize; negative:
	// one file each, unbounded (--log-max-size 0).
	LogMaxSize int64
	// MinFreeDiskMB: below this much free space in WorkDir, the worker
	// tells the master its disk is full, and nothing new is placed on it
	// until space returns (--min-free-disk); 0: DefaultMinFreeDiskMB;
	// negative: never.
	MinFreeDiskMB int
	// LogMaxFiles is the rolled files kept besides the current one
	// (--log-max-files; 0: DefaultLogMaxFiles); the oldest beyond it are
	// deleted.
	LogMaxFiles int

	// RunAs is "dynamic" (--run-as; the worker must be root): each app's
	// executors and each driver run as a uid and gid of their own, with
	// no supplementary groups, in directories of their own (runas.go,
	// procdir.go). Empty: the worker's own user.
	RunAs string
	runAs *runAs // RunAs, checked

	// HostDir is where the workers of this host take their slots
	// (--host-dir; hostslot.go), so that no two of them hand out one
	// identity or one port; every worker of a host must share it. Empty:
	// DefaultHostDir.
	HostDir string
	slot    *hostSlot // this worker's, held while it runs
	// userdbDir is where, with --run-as dynamic, the worker serves the
	// names of its identities (userdb.go); empty: /run/systemd/userdb,
	// where nss-systemd looks. Tests give one of their own.
	userdbDir string

	// WorkDir holds the children's directories and logs (--work-dir),
	// default ./work. It is created if missing and must be writable.
	WorkDir string
	// KillGrace is the time between SIGTERM and SIGKILL (--kill-grace),
	// default 5s.
	KillGrace time.Duration
	// CleanupTTL is how long the directory of an app or a driver that no
	// longer runs here stays after its last change (--cleanup-ttl), default
	// 7 days; negative keeps them for ever.
	CleanupTTL time.Duration
	// CleanupInterval is the time between two sweeps of the work directory
	// (--cleanup-interval), default 30 minutes.
	CleanupInterval time.Duration

	// Tuning; the cmd leaves them at their defaults, tests shorten them.

	// DriverRestartMin and DriverRestartMax bound the backoff before a
	// supervised driver is restarted (1s and 60s).
	DriverRestartMin, DriverRestartMax time.Duration
	// RegisterBackoffMax caps the pause between registration rounds (4s).
	RegisterBackoffMax time.Duration
	// RequestTimeout bounds each call to a master (5s).
	RequestTimeout time.Duration
	// ShutdownReportTimeout bounds the delivery of the final states when the
	// worker stops (3s).
	ShutdownReportTimeout time.Duration
}

// maxIDLen bounds the ids that become directory names and URL path segments.
const maxIDLen = 200

// checkID reports why id is not a safe id, or nil. Ids become directory
// names and URL path segments, so only letters, digits, '-', '_' and '.' are
// allowed, with no leading punctuation and no "..".
func checkID(what, id string) error {
	if id == "" {
		return fmt.Errorf("%s is empty", what)
	}
	if len(id) > maxIDLen {
		return fmt.Errorf("%s is longer than %d characters", what, maxIDLen)
	}
	for i, c := range id {
		if !idChar(c) || i == 0 && !alnum(c) {
			return fmt.Errorf("%s %q: only letters, digits, '-', '_' and '.' are allowed, starting with a letter or digit", what, id)
		}
	}
	if strings.Contains(id, "..") {
		return fmt.Errorf("%s %q contains \"..\"", what, id)
	}
	return nil
}

func alnum(c rune) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' }

// idChar reports whether c may stand in an id (see checkID).
func idChar(c rune) bool { return alnum(c) || c == '-' || c == '_' || c == '.' }

// withDefaults returns c with its zero fields filled and its values checked.
// Error messages name the flag of cmd/worker the field comes from.
func (c Config) withDefaults() (Config, error) {
	var errs []error
	masters, err := wire.ParseMasterURLs("--master", strings.Join(c.Masters, ","))
	if err != nil {
		errs = append(errs, err)
	}
	c.Masters = masters

	if c.Host == "" {
		c.Host = DefaultHost
	}
	if err := httpx.CheckBind(c.Host, c.Secret != "" || c.TLS != nil, "--host"); err != nil {
		errs = append(errs, err)
	}
	if c.AdvertiseHost == "" {
		c.AdvertiseHost = c.Host
		if c.Host == "0.0.0.0" || c.Host == "::" {
			if name, err := os.Hostname(); err == nil && name != "" {
				c.AdvertiseHost = name
			}
		}
	}
	if strings.ContainsAny(c.AdvertiseHost, "/ ") {
		errs = append(errs, fmt.Errorf("--advertise-host %q is not a host name or address", c.AdvertiseHost))
	}
	if c.Port < 0 || c.Port > 65535 {
		errs = append(errs, fmt.Errorf("--port %d: want 0 (any free port) to 65535", c.Port))
	}
	if c.ID != "" {
		if err := checkID("--id", c.ID); err != nil {
			errs = append(errs, err)
		}
	}
	if c.TLS != nil {
		// The master lets a worker certificate speak only for the worker
		// id it is named.
		name := c.TLS.Identity().Name
		if c.ID != "" && c.ID != name {
			errs = append(errs, fmt.Errorf("--id %q: with TLS a worker's id is its certificate's name, %q", c.ID, name))
		}
		c.ID = name
	}

	if c.Cores == 0 {
		c.Cores = runtime.NumCPU()
	}
	if c.Cores < 1 || c.Cores > wire.MaxCores {
		errs = append(errs, fmt.Errorf("--cores %d: want 1 to %d", c.Cores, wire.MaxCores))
	}
	if c.MemoryMB == 0 {
		c.MemoryMB = DefaultMemoryMB()
	}
	if c.MemoryMB < 1 || c.MemoryMB > wire.MaxMemoryMB {
		errs = append(errs, fmt.Errorf("--memory %d MiB: want 1 MiB to %d MiB", c.MemoryMB, wire.MaxMemoryMB))
	}

	explicitPorts := c.PortRange != (wire.PortRange{})
	if !explicitPorts {
		c.PortRange = wire.DefaultPortRange // its block is chosen with its slot, below
	}
	if err := c.PortRange.Check(); err != nil {
		errs = append(errs, fmt.Errorf("--port-range: %w", err))
	}
	if err := wire.CheckResourceOffer(c.Resources); err != nil {
		errs = append(errs, fmt.Errorf("--resource: %w", err))
	}
	if err := wire.CheckLabels(c.Labels); err != nil {
		errs = append(errs, fmt.Errorf("--label: %w", err))
	}
	if c.WorkDir == "" {
		c.WorkDir = DefaultWorkDir
	}
	if abs, err := filepath.Abs(c.WorkDir); err == nil {
		c.WorkDir = abs // children run elsewhere; their paths must not depend on our cwd
	}
	if err := checkWritableDir(c.WorkDir); err != nil {
		errs = append(errs, fmt.Errorf("--work-dir %s: %w", c.WorkDir, err))
	}
	if r, err := resolveRunAs(c.RunAs); err != nil {
		errs = append(errs, err)
	} else if err := r.checkReachable(c.WorkDir); err != nil {
		errs = append(errs, err)
	} else {
		c.runAs = r
	}

	if c.MinFreeDiskMB == 0 {
		c.MinFreeDiskMB = DefaultMinFreeDiskMB
	}
	if c.LogMaxFiles < 0 {
		errs = append(errs, fmt.Errorf("--log-max-files %d: must not be negative", c.LogMaxFiles))
	}
	if c.LogMaxSize == 0 {
		c.LogMaxSize = DefaultLogMaxSize
	}
	if c.LogMaxFiles == 0 {
		c.LogMaxFiles = DefaultLogMaxFiles
	}
	if c.PidsLimit == 0 {
		c.PidsLimit = 4096
	}
	if c.PidsLimit < 0 {
		errs = append(errs, fmt.Errorf("--pids-limit %d is negative", c.PidsLimit))
	}
	if c.DrainDeadline < 0 {
		errs = append(errs, fmt.Errorf("--drain-deadline %v is negative", c.DrainDeadline))
	}
	if c.MaxConnections < 0 {
		errs = append(errs, fmt.Errorf("--max-connections %d is negative", c.MaxConnections))
	}
	if c.KillGrace < 0 {
		errs = append(errs, fmt.Errorf("--kill-grace %v is negative", c.KillGrace))
	}
	if c.CleanupInterval < 0 {
		errs = append(errs, fmt.Errorf("--cleanup-interval %v is negative", c.CleanupInterval))
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&c.KillGrace, DefaultKillGrace)
	if c.CleanupTTL == 0 {
		c.CleanupTTL = DefaultCleanupTTL
	}
	def(&c.CleanupInterval, DefaultCleanupInterval)
	def(&c.DriverRestartMin, DefaultRestartMin)
	def(&c.DriverRestartMax, DefaultRestartMax)
	def(&c.RegisterBackoffMax, DefaultRegisterBackoff)
	def(&c.RequestTimeout, DefaultRequestTimeout)
	def(&c.ShutdownReportTimeout, DefaultShutdownReport)
	if c.DriverRestartMax < c.DriverRestartMin {
		c.DriverRestartMax = c.DriverRestartMin
	}
	// Last: only a configuration that holds takes a slot of the host.
	if c.HostDir == "" {
		c.HostDir = DefaultHostDir()
	}
	if len(errs) == 0 {
		workDir := c.WorkDir
		if real, err := filepath.EvalSymlinks(workDir); err == nil {
			workDir = real // one directory, however it is named
		}
		if slot, ports, err := claimHostSlot(c.HostDir, workDir, c.PortRange, explicitPorts); err != nil {
			errs = append(errs, err)
		} else {
			c.slot, c.PortRange = slot, ports
			c.runAs.within(slot)
		}
	}
	return c, errors.Join(errs...)
}

// scheme is the worker API's URL scheme.
func (c Config) scheme() string {
	if c.TLS != nil {
		return "https"
	}
	return "http"
}

// masterTLS is how the worker calls masters: to master certificates only
// (nil without TLS).
func (c Config) masterTLS() *tls.Config {
	if c.TLS == nil {
		return nil
	}
	return c.TLS.ClientConfig(security.RoleMaster)
}
