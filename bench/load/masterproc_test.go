package load

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestScanMasterLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "master.log")
	log := strings.Join([]string{
		`{"time":"t","level":"INFO","msg":"master serving","address":"http://127.0.0.1:1234"}`,
		`{"time":"t","level":"WARN","msg":"` + noSecretWarning + `"}`,
		`{"time":"t","level":"WARN","msg":"removing worker","worker":"w1"}`,
		`{"time":"t","level":"WARN","msg":"removing worker","worker":"w2"}`,
		`{"time":"t","level":"ERROR","msg":"write failed"}`,
		`panic: boom`,
		``,
	}, "\n")
	if err := os.WriteFile(path, []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	if addr := servingAddress(path); addr != "http://127.0.0.1:1234" {
		t.Errorf("servingAddress = %q", addr)
	}
	ml := scanMasterLog(path)
	if ml.Lines != 6 || ml.RemovedWorkers != 2 || ml.Errors["write failed"] != 1 || len(ml.Other) != 1 {
		t.Errorf("scan: %+v", ml)
	}
	probs := ml.problems(noSecretWarning, "removing worker")
	want := []string{`ERROR "write failed" x1`, "non-log output: panic: boom"}
	if !slices.Equal(probs, want) {
		t.Errorf("problems = %q, want %q", probs, want)
	}
}
