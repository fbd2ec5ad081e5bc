package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// analyze runs systemd-analyze, which scripts/test-deps.sh installs.
func analyze(t *testing.T, args ...string) (string, error) {
	t.Helper()
	if _, err := exec.LookPath("systemd-analyze"); err != nil {
		t.Fatal("systemd-analyze is missing: install the systemd package (make test-deps)")
	}
	out, err := exec.Command("systemd-analyze", args...).CombinedOutput()
	return string(out), err
}

// stagedUnit copies a unit to a temporary directory with its ExecStart
// binary replaced by an existing executable (this test's), since verify
// checks that it exists; the installed units are verified as they are by
// the install test.
func stagedUnit(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("systemd", name))
	if err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := "/usr/bin/" + strings.TrimSuffix(name, ".service")
	if !strings.Contains(string(data), "ExecStart="+bin+" ") {
		t.Fatalf("%s: no ExecStart=%s", name, bin)
	}
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(strings.ReplaceAll(string(data), bin, self)), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// settings are a unit's Key=value lines; a key given twice keeps each
// value, in order.
func settings(t *testing.T, name string) map[string][]string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("systemd", name))
	if err != nil {
		t.Fatal(err)
	}
	s := map[string][]string{}
	for _, line := range strings.Split(string(data), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(line, "#") {
			s[k] = append(s[k], v)
		}
	}
	return s
}

// systemd-analyze verify finds nothing to say about either unit: no
// unknown key, no bad value, no missing dependency.
func TestUnitsVerify(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"berth-master.service", "berth-worker.service"} {
		out, err := analyze(t, "verify", "--man=no", stagedUnit(t, name))
		if err != nil || strings.TrimSpace(out) != "" {
			t.Errorf("systemd-analyze verify %s: %v\n%s", name, err, out)
		}
	}
}

var exposure = regexp.MustCompile(`Overall exposure level for \S+: ([0-9.]+)`)

// The master is hardened as far as it allows: its own user, a read-only
// system but its state directory, no capability, no new privilege; its
// exposure score (systemd-analyze security) stays "OK". The worker keeps
// root, a writable cgroup file system and its delegated subtree, and is
// bounded too.
func TestUnitsHardening(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		max  float64
		want map[string]string
		not  []string
	}{
		{"berth-master.service", 2.0, map[string]string{
			"User": "berth", "ProtectSystem": "strict", "StateDirectory": "berth-master", "NoNewPrivileges": "yes",
			"CapabilityBoundingSet": "", "AmbientCapabilities": "", "PrivateTmp": "yes", "ProtectHome": "yes", "ProtectControlGroups": "yes",
		}, []string{"ReadWritePaths"}},
		{"berth-worker.service", 7.0, map[string]string{
			"User": "root", "Delegate": "yes", "KillMode": "mixed", "StateDirectory": "berth-worker", "ProtectSystem": "full",
		}, []string{"ProtectControlGroups", "ProtectKernelTunables", "RestrictNamespaces", "MemoryDenyWriteExecute"}},
	} {
		s := settings(t, c.name)
		for k, v := range c.want {
			if len(s[k]) != 1 || s[k][0] != v {
				t.Errorf("%s: %s=%q, want %q", c.name, k, s[k], v)
			}
		}
		for _, k := range c.not {
			if len(s[k]) > 0 {
				t.Errorf("%s sets %s=%v", c.name, k, s[k])
			}
		}
		out, err := analyze(t, "security", "--offline=yes", "--no-pager", stagedUnit(t, c.name))
		m := exposure.FindStringSubmatch(out)
		if err != nil || m == nil {
			t.Errorf("systemd-analyze security %s: %v\n%s", c.name, err, out)
			continue
		}
		if score, _ := strconv.ParseFloat(m[1], 64); score > c.max {
			t.Errorf("%s: exposure %.1f, want at most %.1f:\n%s", c.name, score, c.max, out)
		}
	}
}
