package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/berth-cluster/berth/testkit/testproc"
)

// --recover refuses what it cannot recover, naming why, and writes
// nothing; a file cannot ask for it (it would recover at every start).
// The recovery itself is in persistence's and e2e's tests.
func TestRecoverRefusesBadInput(t *testing.T) {
	t.Parallel()
	env := []string{"PATH=" + os.Getenv("PATH")}
	empty := filepath.Join(t.TempDir(), "data")
	config := filepath.Join(t.TempDir(), "master.toml")
	if err := os.WriteFile(config, []byte("recover = true\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"--recover", "--data-dir", empty}, "--recover needs --node-id"},
		{[]string{"--recover", "--node-id", "m1", "--peers", "m1=127.0.0.1:7177"}, "--recover needs --data-dir"},
		{[]string{"--recover", "--node-id", "m1", "--data-dir", empty}, "--raft-addr"},
		{[]string{"--recover", "--node-id", "m1", "--data-dir", empty, "--recovery-mode", "bolt"}, "not --recovery-mode bolt"},
		{[]string{"--recover", "--node-id", "m1", "--data-dir", empty, "--peers", "m1=127.0.0.1:7177"}, "no Raft state to recover"},
		{[]string{"--config", config}, "key recover: not a setting of a file"},
	} {
		res := testproc.RunBinary(t, masterBin, env, c.args...)
		if res.Code != 1 || !strings.Contains(res.Stderr, c.says) {
			t.Errorf("%v: exit %d, stderr %q; want 1 saying %q", c.args, res.Code, res.Stderr, c.says)
		}
	}
	if _, err := os.Stat(filepath.Join(empty, "raft")); err == nil {
		t.Error("a refused recovery wrote Raft's files")
	}
}
