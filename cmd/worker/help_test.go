package main

import (
	"os/exec"
	"strings"
	"testing"
)

// The help lists each flag once, as the master's does (the master's was
// seen listing --config twice; the worker shares its way of adding it).
func TestWorkerHelpListsEachFlagOnce(t *testing.T) {
	out, err := exec.Command(workerBin, "--help").CombinedOutput()
	if err != nil {
		t.Fatalf("worker --help: %v\n%s", err, out)
	}
	seen := map[string]int{}
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) > 0 && strings.HasPrefix(f[0], "--") {
			seen[strings.TrimSuffix(f[0], ",")]++
		}
	}
	for flag, n := range seen {
		if n > 1 {
			t.Errorf("worker --help lists %s %d times", flag, n)
		}
	}
	if seen["--config"] != 1 || seen["--advertise-host"] != 1 || seen["--host-dir"] != 1 {
		t.Errorf("worker --help lists --config %d, --advertise-host %d, --host-dir %d times: want each once", seen["--config"], seen["--advertise-host"], seen["--host-dir"])
	}
}
