package testcluster

// The operator's lost-quorum recovery (docs/HA.md): master --recover on a
// stopped survivor, and masters that come back with empty data directories
// through --join.

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// RecoverMaster runs `master --recover` with m's flags on its data
// directory (m must be stopped) and returns what it printed.
func (c *Cluster) RecoverMaster(m *Master) (string, error) {
	cmd := exec.Command(c.opt.Bin.Master, append(slices.Clone(m.args), "--recover")...)
	cmd.Env = append(os.Environ(), noSecretEnv)
	if m.UID != 0 {
		// As the master runs: files it writes (Raft's snapshot of the
		// recovered state) stay the master's to delete later.
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: m.UID, Gid: m.UID}}
	}
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
	if err := EmptyDir(m.DataDir); err != nil {
		return err
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

// EmptyDir removes what dir holds and keeps dir itself, its owner and
// mode (it may be a mount point: the chaos suite's small disks).
func EmptyDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return os.MkdirAll(dir, 0o700)
	}
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	return nil
}
