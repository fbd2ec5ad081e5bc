package e2e

// Helpers of the daemon, bad-input and pi tests.

import (
	"slices"
	"testing"
	"time"
)

// daemonWorkerTimeout is the --worker-timeout of the daemon tests'
// masters: short, so that a lost worker is noticed within seconds.
const daemonWorkerTimeout = 2 * time.Second

// daemonCluster starts one master without Raft, m1, with the flags (plus a
// short worker timeout unless given) and one worker per id, each with cores
// cores and 4g, and waits until all of them are ALIVE.
func daemonCluster(t *testing.T, flags []string, cores int, ids ...string) *cluster {
	t.Helper()
	if !slices.Contains(flags, "--worker-timeout") {
		flags = append([]string{"--worker-timeout", daemonWorkerTimeout.String()}, flags...)
	}
	return startCluster(t, clusterSpec{flags: flags, workers: ids, cores: cores, memory: "4g"})
}
