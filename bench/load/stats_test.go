package load

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestHBStatsWindow(t *testing.T) {
	var s hbStats
	s.record(true, time.Millisecond, time.Millisecond, 5*time.Second, "w0") // before the window: ignored
	s.setOn(true)
	s.record(true, 2*time.Millisecond, 3*time.Millisecond, time.Second, "w1")
	s.record(false, 0, 0, 0, "w2")
	s.record(true, 4*time.Millisecond, 5*time.Millisecond, 2*time.Second, "w3")
	s.setOn(false)
	s.record(false, 0, 0, 0, "w4")
	s.noteGap(1500*time.Millisecond, "w5")
	if s.ok != 2 || s.errs != 1 || len(s.rtt) != 2 || s.maxGap != 2*time.Second || s.gapOf != "w3" {
		t.Errorf("stats: ok %d errs %d rtt %v gap %v of %s", s.ok, s.errs, s.rtt, s.maxGap, s.gapOf)
	}
}

func TestParseInts(t *testing.T) {
	got, err := parseInts("workers", "1000, 5000,10000")
	if err != nil || !slices.Equal(got, []int{1000, 5000, 10000}) {
		t.Errorf("parseInts = %v, %v", got, err)
	}
	for _, bad := range []string{"", "0", "-3", "1,x", ","} {
		if _, err := parseInts("workers", bad); err == nil {
			t.Errorf("parseInts(%q) accepted", bad)
		}
	}
}

func TestCell(t *testing.T) {
	cases := map[any]string{
		0.0: "0", 0.123456: "0.12", 12.345: "12.3", 1234.5: "1234", -0.5: "-0.50",
		3: "3", "x": "x", 1500 * time.Microsecond: "1.50",
	}
	for in, want := range cases {
		if got := cell(in); got != want {
			t.Errorf("cell(%v) = %q, want %q", in, got, want)
		}
	}
}

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
