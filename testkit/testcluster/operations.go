package testcluster

// The operator's lost-quorum recovery (docs/HA.md): master --recover on a
// stopped survivor, and masters that come back with empty data directories
// through --join.

import (
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
)

// RecoverMaster runs `master --recover` with m's flags on its data
// directory (m must be stopped) and returns what it printed.
func (c *Cluster) RecoverMaster(m *Master) (string, error) {
	cmd := exec.Command(c.opt.Bin.Master, append(slices.Clone(m.args), "--recover")...)
	cmd.Env = append(os.Environ(), noSecretEnv)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("master %s --recover: %w\n%s", m.ID, err, out)
	}
	return string(out), nil
}

// Rejoin starts m again as a new master of the running cluster: its data
// directory emptied, without --peers (it would bootstrap a cluster of its
// own), with --join naming the masters given. It waits until m's API
// answers.
func (c *Cluster) Rejoin(m *Master, through ...*Master) error {
	if p := m.Proc(); p != nil && !p.Exited() {
		return fmt.Errorf("master %s still runs", m.ID)
	}
	if err := os.RemoveAll(m.DataDir); err != nil {
		return err
	}
	if err := os.MkdirAll(m.DataDir, 0o700); err != nil {
		return err
	}
	if m.UID != 0 {
		if err := os.Chown(m.DataDir, int(m.UID), int(m.UID)); err != nil {
			return err
		}
	}
	var args []string
	for i := 0; i < len(m.args); i++ {
		if m.args[i] == "--peers" || m.args[i] == "--join" || m.args[i] == "--raft-addr" {
			i++ // and its value
			continue
		}
		args = append(args, m.args[i])
	}
	var urls []string
	for _, o := range through {
		urls = append(urls, o.URL)
	}
	m.args = append(args, "--raft-addr", m.RaftAddr, "--join", strings.Join(urls, ","))
	return c.StartMaster(m)
}
