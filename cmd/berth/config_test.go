package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/berth-cluster/berth/internal/httpx"
	"github.com/berth-cluster/berth/testkit/testproc"
	"github.com/berth-cluster/berth/wire"
)

// namedMaster answers GET /v1/cluster as the leader named id, to callers
// with the secret: which one berth asked shows where --master came from.
func namedMaster(t *testing.T, id, secret string) string {
	t.Helper()
	srv := httptest.NewServer(httpx.RequireSecret(secret, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		httpx.WriteJSON(w, 200, wire.ClusterStatus{MasterID: id, Status: wire.MasterAlive, View: "leader"})
	})))
	t.Cleanup(srv.Close)
	return srv.URL
}

func writeBerthConfig(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "berth.toml")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// berthClean runs berth with env alone on top of PATH: none of this
// process's BERTH_* variables.
func berthClean(t *testing.T, env []string, args ...string) testproc.Result {
	t.Helper()
	return testproc.RunBinary(t, berthBin, append([]string{"PATH=" + os.Getenv("PATH")}, env...), args...)
}

// --master comes from the flag over the environment over the file (the
// file through --config or BERTH_CONFIG), and the file's secret-file is
// used.
func TestConfigPrecedenceFlagEnvFile(t *testing.T) {
	t.Parallel()
	const secret = "file-secret"
	secretFile := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secretFile, []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	fromFile, fromEnv, fromFlag := namedMaster(t, "from-file", secret), namedMaster(t, "from-env", secret), namedMaster(t, "from-flag", secret)
	file := writeBerthConfig(t, "master = \""+fromFile+"\"\nsecret-file = \""+secretFile+"\"\ntimeout = \"20s\"\n")
	cases := []struct {
		env  []string
		args []string
		want string
	}{
		{args: []string{"--config", file}, want: "from-file"},
		{env: []string{"BERTH_CONFIG=" + file}, want: "from-file"},
		{env: []string{"BERTH_MASTER=" + fromEnv}, args: []string{"--config", file}, want: "from-env"},
		{env: []string{"BERTH_MASTER=" + fromEnv}, args: []string{"--config", file, "--master", fromFlag}, want: "from-flag"},
	}
	for _, c := range cases {
		res := berthClean(t, c.env, append(c.args, "status")...)
		if res.Code != 0 || !strings.Contains(res.Stdout, "Master "+c.want) {
			t.Errorf("%v %v: exit %d, stdout %q, stderr %q; want master %s", c.env, c.args, res.Code, res.Stdout, res.Stderr, c.want)
		}
	}
	// The example in deploy/ loads (its master is overridden here).
	example, err := filepath.Abs("../../deploy/berth.toml")
	if err != nil {
		t.Fatal(err)
	}
	res := berthClean(t, []string{"BERTH_SECRET=" + secret}, "--config", example, "--master", fromFlag, "status")
	if res.Code != 0 || !strings.Contains(res.Stdout, "Master from-flag") {
		t.Errorf("deploy/berth.toml: exit %d: %s%s", res.Code, res.Stdout, res.Stderr)
	}
}

// A bad file is refused naming the file, the line and the key, before
// berth calls any master.
func TestBadConfigIsRefusedNamingFileLineAndKey(t *testing.T) {
	t.Parallel()
	cases := []struct{ content, want string }{
		{"mastr = \"http://127.0.0.1:7077\"\n", `:1: unknown key "mastr": berth has no flag --mastr (did you mean master?)`},
		{"timeout = 30\n", `:1: key timeout: want a duration as a string`},
		{"master = [\"http://127.0.0.1:7077\"]\n", `:1: key master: want a string, not an array`},
		{"timeout = \"5s\"\ntimeout = \"6s\"\n", `:2: key timeout given twice (first on line 1)`},
		{"timeout = \"5s\"\nmaster = \"ftp://127.0.0.1:7077\"\n", `:2: key master: --master "ftp://127.0.0.1:7077": scheme must be http or https`},
		{"timeout = \"-1s\"\n", `:1: key timeout: --timeout -1s: must be positive`},
		{"log-level = \"loud\"\n", `:1: key log-level: --log-level`},
		{"cores = 2\n", `:1: unknown key "cores": berth has no flag --cores`}, // a command's flag has no key
		{"[cluster]\nmaster = \"http://127.0.0.1:7077\"\n", `:1: [cluster]: the file has no sections`},
	}
	var bad []testproc.BadFlag
	for _, c := range cases {
		path := writeBerthConfig(t, c.content)
		bad = append(bad, testproc.BadFlag{Args: []string{"--config", path, "status"}, Flag: path + c.want})
	}
	missing := filepath.Join(t.TempDir(), "missing.toml")
	bad = append(bad, testproc.BadFlag{Env: []string{"BERTH_CONFIG=" + missing}, Args: []string{"status"}, Flag: "--config: open " + missing})
	testproc.CheckBadFlags(t, berthBin, 1, []string{"PATH=" + os.Getenv("PATH")}, bad)
}

// --version prints the build as master and worker do and exits 0, with or
// without a command after it.
func TestVersion(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"--version"}, {"--version", "status"}} {
		res := berthClean(t, nil, args...)
		lines := strings.Split(strings.TrimSpace(res.Stdout), "\n")
		if res.Code != 0 || res.Stderr != "" || len(lines) != 5 || !strings.HasPrefix(lines[0], "berth ") ||
			!strings.HasPrefix(lines[1], "commit:") || !strings.HasPrefix(lines[2], "commit time:") || !strings.HasPrefix(lines[3], "built:") ||
			lines[4] != "go:          "+runtime.Version()+" "+runtime.GOOS+"/"+runtime.GOARCH {
			t.Errorf("%v: exit %d, stderr %q, stdout:\n%s", args, res.Code, res.Stderr, res.Stdout)
		}
	}
}
