package main

import (
	"testing"

	"github.com/berth-cluster/berth/testkit/testproc"
)

// The help lists each flag once, as the master's does (the master's was
// seen listing --config twice; the worker shares its way of adding it).
func TestWorkerHelpListsEachFlagOnce(t *testing.T) {
	seen := testproc.HelpFlags(t, workerBin)
	for flag, n := range seen {
		if n > 1 {
			t.Errorf("worker --help lists %s %d times", flag, n)
		}
	}
	if seen["--config"] != 1 || seen["--advertise-host"] != 1 || seen["--host-dir"] != 1 {
		t.Errorf("worker --help lists --config %d, --advertise-host %d, --host-dir %d times: want each once", seen["--config"], seen["--advertise-host"], seen["--host-dir"])
	}
}
