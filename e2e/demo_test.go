package e2e

// make demo, as a new user runs it (scripts/demo.sh with this test's
// binaries): its local TLS cluster runs pi through a kill -9 of the leader,
// prints pi's result and the new leader, and stops everything it started.

import (
	"context"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestDemoScript(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "../scripts/demo.sh")
	cmd.Env = append(cmd.Environ(), "BERTH_DEMO_BIN="+filepath.Dir(bin.Master))
	out, err := cmd.CombinedOutput()
	text := string(out)
	if err != nil {
		t.Fatalf("scripts/demo.sh: %v\n%s", err, text)
	}
	leader := regexp.MustCompile(`(?m)^leader: (m[123])$`).FindStringSubmatch(text)
	newLeader := regexp.MustCompile(`(?m)^new leader: (m[123]) \(was (m[123])\)$`).FindStringSubmatch(text)
	switch {
	case leader == nil:
		t.Errorf("the demo named no leader before the kill:\n%s", text)
	case newLeader == nil || newLeader[2] != leader[1] || newLeader[1] == leader[1]:
		t.Errorf("the demo named no new leader after killing %s:\n%s", leader[1], text)
	}
	for _, want := range []string{"Pi is roughly 3.14", "FINISHED exit code 0"} {
		if !strings.Contains(text, want) {
			t.Errorf("the demo's output lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "Killed") {
		t.Errorf("the demo prints the shell's Killed line:\n%s", text)
	}
}
