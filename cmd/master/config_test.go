package main

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/berth-cluster/berth/internal/httpx"
	"github.com/berth-cluster/berth/testkit/testcluster"
	"github.com/berth-cluster/berth/testkit/testproc"
	"github.com/berth-cluster/berth/wire"
)

func writeConfig(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "master.toml")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// A running master takes each setting from the highest source that gives
// it: --node-id from the flag over the environment and the file, the
// advertised address from the environment over the file, the port from
// the file over the default. Its /metrics carries berth_build_info.
func TestConfigPrecedenceFlagEnvFileDefault(t *testing.T) {
	t.Parallel()
	port, err := testcluster.FreePort("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	file := writeConfig(t, fmt.Sprintf(`recovery-mode = "none"
node-id = "from-file"
advertise = "http://127.0.0.1:%d"
port = %d
`, port, port))
	envAdvertise := fmt.Sprintf("http://localhost:%d", port)
	dir := t.TempDir()
	p, err := testcluster.Start(t, "master", masterBin, filepath.Join(dir, "master.log"),
		[]string{"--config", file, "--node-id", "from-flag"},
		testcluster.ProcOptions{CleanEnv: true, Env: []string{"PATH=" + os.Getenv("PATH"),
			"BERTH_MASTER_NODE_ID=from-env", "BERTH_MASTER_ADVERTISE=" + envAdvertise}})
	if err != nil {
		t.Fatal(err)
	}
	url := fmt.Sprintf("http://127.0.0.1:%d", port)
	if err := testcluster.WaitHealthy(t.Context(), p, url, 15*time.Second); err != nil {
		t.Fatalf("the master does not listen on the file's port %d: %v", port, err)
	}
	// The leader's address is known once the lone master has elected itself.
	var st wire.ClusterStatus
	testproc.Eventually(t, 10*time.Second, "the master to lead", func() bool {
		err := httpx.NewClient("", 10*time.Second).Do(t.Context(), http.MethodGet, url+"/v1/cluster", nil, &st)
		return err == nil && st.Leader != ""
	})
	if st.MasterID != "from-flag" {
		t.Errorf("master id %q: want the flag's over the environment's and the file's", st.MasterID)
	}
	if st.Leader != envAdvertise {
		t.Errorf("advertised address %q: want the environment's %s over the file's", st.Leader, envAdvertise)
	}
	families := testproc.Scrape(t, url+"/metrics", "")
	if v := testproc.Value(families, "berth_build_info", "version", "devel", "goversion", runtime.Version()); v != 1 {
		t.Errorf("berth_build_info{version=devel,goversion=%s} = %v, want 1", runtime.Version(), v)
	}
}

// A file with a typo, a wrong type, a duplicate key or a value the master
// refuses stops it before it serves or writes anything, naming the file,
// the line and the key.
func TestBadConfigIsRefusedNamingFileLineAndKey(t *testing.T) {
	t.Parallel()
	cases := []struct{ content, want string }{
		{"port = 0\nworker-timout = \"60s\"\n", `:2: unknown key "worker-timout": master has no flag --worker-timout (did you mean worker-timeout?)`},
		{"port = \"7077\"\n", `:1: key port: want an integer, not the string "7077"`},
		{"worker-timeout = 60\n", `:1: key worker-timeout: want a duration as a string`},
		{"port = 0\n\nworker-timeout = \"soon\"\n", `:3: key worker-timeout: "soon" is not a duration`},
		{"port = 0\nplacement = \"pack\"\nport = 1\n", `:3: key port given twice (first on line 1)`},
		{"port = 0\nplacement = \"no-such-policy\"\n", `:2: key placement: --placement`},
		{"port = 0\nworker-timeout = \"-1s\"\n", `:2: key worker-timeout: --worker-timeout`},
		{"port = 0\nhost = \"0.0.0.0\"\n", `:2: key host: --host`},
		{"port = 0\nmax-connections = -1\n", `:2: key max-connections: --max-connections`},
		{"port = 0\n[raft]\npeers = \"m1=127.0.0.1:7177\"\n", `:2: [raft]: the file has no sections`},
		{"port = 0\npeers = \n", `:2:9: unexpected character`},
		{"config = \"other.toml\"\n", `:1: key config: not a setting of a file`},
	}
	var bad []testproc.BadFlag
	var dataDirs []string
	for _, c := range cases {
		path := writeConfig(t, c.content)
		dataDir := filepath.Join(t.TempDir(), "data")
		dataDirs = append(dataDirs, dataDir)
		bad = append(bad, testproc.BadFlag{Args: []string{"--data-dir", dataDir, "--config", path}, Flag: path + c.want})
	}
	missing := filepath.Join(t.TempDir(), "missing.toml")
	bad = append(bad,
		testproc.BadFlag{Args: []string{"--config", missing}, Flag: "--config: open " + missing},
		testproc.BadFlag{Env: []string{"BERTH_MASTER_CONFIG=" + missing}, Flag: "--config: open " + missing},
	)
	env := []string{"PATH=" + os.Getenv("PATH")}
	for i, res := range testproc.CheckBadFlags(t, masterBin, 1, env, bad) {
		if strings.Contains(res.Stderr, "master serving") {
			t.Errorf("%v: the master started serving before refusing", bad[i].Args)
		}
		if i < len(dataDirs) {
			if _, err := os.Stat(dataDirs[i]); err == nil {
				t.Errorf("%v: the master wrote its data dir before refusing", bad[i].Args)
			}
		}
	}
}

// --print-config prints every flag with its effective value and source,
// as a file that --config loads back to the same values; the example
// file in deploy/ is such a file.
func TestPrintConfigRoundTripsAndTheExampleLoads(t *testing.T) {
	t.Parallel()
	file := writeConfig(t, "placement = \"pack\"\nmax-drivers = 7\nworker-timeout = \"45s\"\n")
	env := []string{"PATH=" + os.Getenv("PATH"), "BERTH_MASTER_MAX_DRIVERS=8", "BERTH_SECRET=not-to-be-seen"}
	res := testproc.RunBinary(t, masterBin, env, "--config", file, "--worker-timeout", "50s", "--print-config")
	if res.Code != 0 {
		t.Fatalf("--print-config: exit %d: %s", res.Code, res.Stderr)
	}
	for _, want := range []string{
		`placement = "pack"`, file + ":1",
		`max-drivers = 8`, "# $BERTH_MASTER_MAX_DRIVERS",
		`worker-timeout = "50s"`, "# --worker-timeout",
		`retained-apps = 200`, "# default",
		"# secret: set ($BERTH_SECRET), not shown",
		`raft-snapshot-interval = "2m0s"`, `log-format = "text"`, `tls-ca-file = ""`,
	} {
		if !strings.Contains(res.Stdout, want) {
			t.Errorf("--print-config lacks %q:\n%s", want, res.Stdout)
		}
	}
	if strings.Contains(res.Stdout, "not-to-be-seen") {
		t.Errorf("--print-config shows the secret:\n%s", res.Stdout)
	}
	printed := writeConfig(t, res.Stdout)
	again := testproc.RunBinary(t, masterBin, []string{"PATH=" + os.Getenv("PATH")}, "--config", printed, "--print-config")
	if again.Code != 0 {
		t.Fatalf("the printed config does not load: exit %d: %s", again.Code, again.Stderr)
	}
	if settings(again.Stdout) != settings(res.Stdout) {
		t.Errorf("loaded back, the values changed:\n%s\nthen\n%s", res.Stdout, again.Stdout)
	}
	example, err := filepath.Abs("../../deploy/master.toml")
	if err != nil {
		t.Fatal(err)
	}
	ex := testproc.RunBinary(t, masterBin, []string{"PATH=" + os.Getenv("PATH")}, "--config", example, "--print-config")
	if ex.Code != 0 || !strings.Contains(ex.Stdout, `data-dir = "/var/lib/berth-master"`) {
		t.Errorf("deploy/master.toml: exit %d: %s\n%s", ex.Code, ex.Stderr, ex.Stdout)
	}
}

// settings is a printed configuration without its comments.
func settings(printed string) string {
	var out []string
	for _, line := range strings.Split(printed, "\n") {
		if v, _, _ := strings.Cut(line, " # "); v != "" && !strings.HasPrefix(v, "#") {
			out = append(out, strings.TrimSpace(v))
		}
	}
	return strings.Join(out, "\n")
}

// --version prints the build and exits 0, whatever else is wrong.
func TestVersion(t *testing.T) {
	t.Parallel()
	res := testproc.RunBinary(t, masterBin, nil, "--version", "--config", "/no/such/file", "--worker-timeout", "-1s")
	if res.Code != 0 || res.Stderr != "" {
		t.Fatalf("--version: exit %d, stderr %q", res.Code, res.Stderr)
	}
	lines := strings.Split(strings.TrimSpace(res.Stdout), "\n")
	if len(lines) != 5 || !strings.HasPrefix(lines[0], "master ") || !strings.HasPrefix(lines[1], "commit:") ||
		!strings.HasPrefix(lines[2], "commit time:") || !strings.HasPrefix(lines[3], "built:") ||
		lines[4] != "go:          "+runtime.Version()+" "+runtime.GOOS+"/"+runtime.GOARCH {
		t.Errorf("--version printed:\n%s", res.Stdout)
	}
}

// --advertise-host, as the worker's flag: the host others call the master
// by, with its own scheme and port (the master had --advertise, a whole
// URL, where the worker has --advertise-host); both at once are refused.
func TestAdvertiseHostAsTheWorkers(t *testing.T) {
	t.Parallel()
	port, err := testcluster.FreePort("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	p, err := testcluster.Start(t, "master", masterBin, filepath.Join(dir, "master.log"),
		[]string{"--recovery-mode", "none", "--port", fmt.Sprint(port), "--data-dir", dir, "--advertise-host", "localhost"},
		testcluster.ProcOptions{CleanEnv: true, Env: []string{"PATH=" + os.Getenv("PATH")}})
	if err != nil {
		t.Fatal(err)
	}
	url := fmt.Sprintf("http://127.0.0.1:%d", port)
	if err := testcluster.WaitHealthy(t.Context(), p, url, 15*time.Second); err != nil {
		t.Fatal(err)
	}
	var st wire.ClusterStatus
	testproc.Eventually(t, 10*time.Second, "the master to lead", func() bool {
		err := httpx.NewClient("", 10*time.Second).Do(t.Context(), http.MethodGet, url+"/v1/cluster", nil, &st)
		return err == nil && st.Leader != ""
	})
	if want := fmt.Sprintf("http://localhost:%d", port); st.Leader != want {
		t.Errorf("advertised %q, want %s", st.Leader, want)
	}
	out, err := exec.Command(masterBin, "--recovery-mode", "none", "--port", "0", "--data-dir", t.TempDir(),
		"--advertise-host", "localhost", "--advertise", "http://localhost:1").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "--advertise-host with --advertise") {
		t.Errorf("both flags: %v %s", err, out)
	}
}

// A bad setting is named before the master listens: a bad placement was
// reported as the port in use when another process had it.
func TestABadSettingIsNamedBeforeThePort(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := fmt.Sprint(ln.Addr().(*net.TCPAddr).Port)
	out, err := exec.Command(masterBin, "--recovery-mode", "none", "--data-dir", t.TempDir(), "--port", port, "--placement", "bogus").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "--placement") || strings.Contains(string(out), "--host/--port") {
		t.Errorf("a bad --placement with the port taken: %v %s, want --placement named", err, out)
	}
}

// The help lists each flag once (it was seen listing --config twice).
func TestHelpListsEachFlagOnce(t *testing.T) {
	seen := testproc.HelpFlags(t, masterBin)
	for flag, n := range seen {
		if n > 1 {
			t.Errorf("master --help lists %s %d times", flag, n)
		}
	}
	if seen["--config"] != 1 || seen["--advertise-host"] != 1 {
		t.Errorf("master --help lists --config %d times, --advertise-host %d: want each once", seen["--config"], seen["--advertise-host"])
	}
}
