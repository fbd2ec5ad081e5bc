package failover

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// config is the parsed flags of a subcommand (the other one's are zero).
type config struct {
	bin               string
	dir               string // work directory
	keep              bool
	secret            string
	scenarios         []string
	masters           int
	workers           int
	workerCores       int
	workerMemory      string
	executors         int
	raftMultiplier    int
	workerTimeout     time.Duration // 0: the master's default
	recoveryTimeout   time.Duration // 0: the master's default
	logLevel          string
	masterExtra       []string
	poll              time.Duration
	roundTimeout      time.Duration
	settle            time.Duration
	slow              time.Duration
	rounds            int
	handoverRounds    int
	steadyDuration    time.Duration
	steadyClients     int
	submitCount       int
	submitConcurrency []int
	submitWorkers     int
	submitBolt        bool
	submitViaFollower bool
	maxTime           time.Duration
	jsonPath          string
}

func (c *config) masterBin() string { return filepath.Join(c.bin, "master") }
func (c *config) workerBin() string { return filepath.Join(c.bin, "worker") }

// commonMasterArgs are the flags every master gets besides its identity.
func (c *config) commonMasterArgs() []string {
	args := []string{"--secret", c.secret}
	if c.workerTimeout > 0 {
		args = append(args, "--worker-timeout", c.workerTimeout.String())
	}
	if c.recoveryTimeout > 0 {
		args = append(args, "--recovery-timeout", c.recoveryTimeout.String())
	}
	args = append(args, "--log-level", c.logLevel)
	return append(args, c.masterExtra...)
}

func (c *config) has(scenario string) bool { return slices.Contains(c.scenarios, scenario) }

func (c *config) check() error {
	var errs []error
	for _, s := range c.scenarios {
		if s != scenarioKill && s != scenarioHandover && s != scenarioSteady && s != scenarioSubmit {
			errs = append(errs, fmt.Errorf("--scenario %q: want kill, handover or steady (submissions: berthbench submissions)", s))
		}
	}
	if len(c.scenarios) == 0 {
		errs = append(errs, errors.New("--scenario: none given"))
	}
	if c.masters < 3 || c.masters > 9 || c.masters%2 == 0 {
		errs = append(errs, fmt.Errorf("--masters %d: want an odd number from 3 to 9 (a failover needs a quorum left)", c.masters))
	}
	if c.workerCores < 1 {
		errs = append(errs, fmt.Errorf("--worker-cores %d: want at least 1", c.workerCores))
	}
	if c.raftMultiplier < 1 || c.raftMultiplier > 10 {
		errs = append(errs, fmt.Errorf("--raft-multiplier %d: want 1 to 10", c.raftMultiplier))
	}
	if c.maxTime <= 0 || c.workerTimeout < 0 || c.recoveryTimeout < 0 {
		errs = append(errs, errors.New("--max-time must be positive, the timeouts not negative"))
	}
	if c.failovers() {
		errs = append(errs, c.checkFailover()...)
	}
	if c.has(scenarioSubmit) {
		errs = append(errs, c.checkSubmit()...)
	}
	abs, err := filepath.Abs(c.bin)
	if err != nil {
		errs = append(errs, err)
	}
	c.bin = abs
	for _, b := range []string{c.masterBin(), c.workerBin()} {
		if st, err := os.Stat(b); err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
			errs = append(errs, fmt.Errorf("--bin: no executable %s (run make build, or go build -o DIR/ ./cmd/master ./cmd/worker)", b))
		}
	}
	return errors.Join(errs...)
}

// failovers reports whether a failover scenario is to run.
func (c *config) failovers() bool {
	return c.has(scenarioKill) || c.has(scenarioHandover) || c.has(scenarioSteady)
}

func (c *config) checkFailover() []error {
	var errs []error
	if c.workers < 1 || c.workers > 200 {
		errs = append(errs, fmt.Errorf("--workers %d: want 1 to 200", c.workers))
	}
	if c.executors > c.workers*c.workerCores {
		errs = append(errs, fmt.Errorf("--executors %d: the workers have %d cores", c.executors, c.workers*c.workerCores))
	}
	if c.rounds < 1 || c.rounds > 1000 || c.handoverRounds < 1 || c.handoverRounds > 1000 {
		errs = append(errs, errors.New("--rounds and --handover-rounds: want 1 to 1000"))
	}
	if c.poll <= 0 || c.roundTimeout <= 0 || c.settle < 0 {
		errs = append(errs, errors.New("--poll and --round-timeout must be positive, --settle not negative"))
	}
	return errs
}

func (c *config) checkSubmit() []error {
	var errs []error
	if c.submitWorkers < 0 || c.submitWorkers > 200 {
		errs = append(errs, fmt.Errorf("--workers %d: want 0 to 200", c.submitWorkers))
	}
	if c.submitCount < 1 || c.submitCount > 1_000_000 {
		errs = append(errs, fmt.Errorf("--count %d: want 1 to 1000000", c.submitCount))
	}
	for _, n := range c.submitConcurrency {
		if n < 1 || n > 1024 {
			errs = append(errs, fmt.Errorf("--concurrency %d: want 1 to 1024", n))
		}
	}
	return errs
}

// settings are the parameters worth printing with the results.
func settings(cfg *config) map[string]string {
	orDefault := func(d time.Duration, def string) string {
		if d == 0 {
			return def
		}
		return d.String()
	}
	conc := make([]string, len(cfg.submitConcurrency))
	for i, n := range cfg.submitConcurrency {
		conc[i] = strconv.Itoa(n)
	}
	out := map[string]string{
		"scenarios":       strings.Join(cfg.scenarios, ","),
		"master timeouts": fmt.Sprintf("--raft-multiplier %d, --worker-timeout %s, --recovery-timeout %s", cfg.raftMultiplier, orDefault(cfg.workerTimeout, "default (60s)"), orDefault(cfg.recoveryTimeout, "default (= worker timeout)")),
	}
	if cfg.failovers() {
		app := "no app"
		if cfg.executors > 0 {
			app = fmt.Sprintf("an app with %d executors (sleep 3600, 1 core, 64 MiB) and a client on its event stream", cfg.executors)
		}
		out["failover cluster"] = fmt.Sprintf("%d masters (Raft), %d workers × %d cores × %s, %s", cfg.masters, cfg.workers, cfg.workerCores, cfg.workerMemory, app)
		out["rounds"] = fmt.Sprintf("kill %d, handover %d; poll every %s, settle %s, round timeout %s", cfg.rounds, cfg.handoverRounds, cfg.poll, cfg.settle, cfg.roundTimeout)
	}
	if cfg.has(scenarioSubmit) {
		out["submit"] = fmt.Sprintf("%d registrations per concurrency (%s), %d workers, bolt %v, via follower %v", cfg.submitCount, strings.Join(conc, ","), cfg.submitWorkers, cfg.submitBolt, cfg.submitViaFollower)
	}
	return out
}
