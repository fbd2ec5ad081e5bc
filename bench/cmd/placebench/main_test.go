package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	err := newApp(&out).Run(append([]string{"placebench"}, args...))
	return out.String(), err
}

// The contract: placebench openb --nodes FILE --pods FILE --policy
// NAME[,NAME...] --seeds A-B --csv OUT (and --svg OUT).
func TestOpenbOnAFixture(t *testing.T) {
	dir := t.TempDir()
	csv, svg := filepath.Join(dir, "out.csv"), filepath.Join(dir, "out.svg")
	out, err := run(t, "openb", "--nodes", "../../openb/testdata/nodes.csv", "--pods", "../../openb/testdata/pods.csv",
		"--policy", "fgd,frag-fit,spread", "--seeds", "42-43", "--csv", csv, "--svg", svg)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{"3 nodes (11 GPUs)", "fgd", "frag-fit", "spread", "µs/decision"} {
		if !strings.Contains(out, want) {
			t.Errorf("output without %q:\n%s", want, out)
		}
	}
	data, err := os.ReadFile(csv)
	if err != nil || !strings.HasPrefix(string(data), "policy,seed,arrived_pct,gpu_alloc_pct\n") || !strings.Contains(string(data), "\nfrag-fit,43,") {
		t.Errorf("CSV %v:\n%.300s", err, data)
	}
	if data, err := os.ReadFile(svg); err != nil || !strings.Contains(string(data), "<svg") {
		t.Errorf("SVG %v", err)
	}
}

func TestOpenbBadFlagsNameTheFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		flag string
	}{
		{[]string{"--policy", "nope"}, "--policy"},
		{[]string{"--seeds", "9-1"}, "--seeds"},
		{[]string{"--tune", "0"}, "--tune"},
		{[]string{"--parallel", "0"}, "--parallel"},
		{[]string{"--nodes", "/no/such.csv"}, "--nodes"},
		{[]string{"--pods", "/no/such.csv"}, "--pods"},
	} {
		args := append([]string{"openb", "--nodes", "../../openb/testdata/nodes.csv", "--pods", "../../openb/testdata/pods.csv", "--csv", "", "--svg", ""}, tc.args...)
		if _, err := run(t, args...); err == nil || !strings.Contains(err.Error(), tc.flag) {
			t.Errorf("%v: %v, want an error naming %s", tc.args, err, tc.flag)
		}
	}
}
