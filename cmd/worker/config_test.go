package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
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
	path := filepath.Join(t.TempDir(), "worker.toml")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// A running worker takes each setting from the highest source that gives
// it, as it tells the master when it registers: its memory from the flag
// over the environment and the file, its cores from the environment over
// the file, its port from the file over the default. Its /metrics carries
// berth_build_info.
func TestConfigPrecedenceFlagEnvFileDefault(t *testing.T) {
	t.Parallel()
	registered := make(chan wire.RegisterWorker, 1)
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/workers", testproc.HandleJSON(func(_ *http.Request, req wire.RegisterWorker) (any, error) {
		select {
		case registered <- req:
		default:
		}
		return wire.RegisteredWorker{MasterID: "fake", Epoch: 1, HeartbeatIntervalMs: 200}, nil
	}))
	mux.HandleFunc("POST /v1/workers/{id}/{what}", func(w http.ResponseWriter, r *http.Request) {
		httpx.WriteJSON(w, 200, struct{}{})
	})
	master := httptest.NewServer(httpx.RequireSecret("k", mux))
	t.Cleanup(master.Close)

	port, err := testcluster.FreePort("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	file := writeConfig(t, fmt.Sprintf(`master = %q
work-dir = %q
port = %d
cores = 3
memory = "300m"
`, master.URL, t.TempDir(), port))
	p, err := testcluster.Start(t, "worker", workerBin, filepath.Join(t.TempDir(), "worker.log"),
		[]string{"--config", file, "--memory", "200m"},
		testcluster.ProcOptions{CleanEnv: true, Env: []string{"PATH=" + os.Getenv("PATH"), "BERTH_SECRET=k",
			"BERTH_WORKER_CORES=2", "BERTH_WORKER_MEMORY=250m"}})
	if err != nil {
		t.Fatal(err)
	}
	reg := testproc.Receive(t, registered, 15*time.Second, "the worker's registration")
	if reg.MemoryMB != 200 {
		t.Errorf("memory %d MB: want the flag's 200 over the environment's and the file's", reg.MemoryMB)
	}
	if reg.Cores != 2 {
		t.Errorf("cores %d: want the environment's 2 over the file's 3", reg.Cores)
	}
	if reg.Port != port {
		t.Errorf("port %d: want the file's %d over the default", reg.Port, port)
	}
	families := testproc.Scrape(t, fmt.Sprintf("http://127.0.0.1:%d/metrics", port), "k")
	if v := testproc.Value(families, "berth_build_info", "version", "devel", "goversion", runtime.Version()); v != 1 {
		t.Errorf("berth_build_info{version=devel,goversion=%s} = %v, want 1", runtime.Version(), v)
	}
	p.Kill()
}

// A file with a typo, a wrong type, a duplicate key or a value the worker
// refuses is a usage error (exit 2) naming the file, the line and the key.
func TestBadConfigIsRefusedNamingFileLineAndKey(t *testing.T) {
	t.Parallel()
	ok := fmt.Sprintf("master = \"http://127.0.0.1:1\"\nwork-dir = %q\n", t.TempDir())
	cases := []struct{ content, want string }{
		{ok + "kill-grase = \"5s\"\n", `:3: unknown key "kill-grase": worker has no flag --kill-grase (did you mean kill-grace?)`},
		{ok + "kill-grace = 5\n", `:3: key kill-grace: want a duration as a string`},
		{ok + "log-max-files = \"9\"\n", `:3: key log-max-files: want an integer, not the string "9"`},
		{ok + "resource = \"gpu=4\"\n", `:3: key resource: want an array of strings`},
		{ok + "resource = [\"gpu=4\", 4]\n", `:3: key resource: element 2: want a string`},
		{ok + "cores = 4\ncores = 5\n", `:4: key cores given twice (first on line 3)`},
		{ok + "cores = 70000\n", `:3: key cores: --cores`},
		{ok + "memory = \"lots\"\n", `:3: key memory: --memory`},
		{ok + "min-free-disk = \"-1m\"\n", `:3: key min-free-disk: --min-free-disk`},
		{ok + "resource = [\"gpu=2\", \"gpu=1\"]\n", `:3: key resource: --resource`},
		{"work-dir = \"/tmp\"\n", "--master"}, // not from the file: no file named
		{ok + "[limits]\npids-limit = 10\n", `:3: [limits]: the file has no sections`},
	}
	var bad []testproc.BadFlag
	for _, c := range cases {
		path := writeConfig(t, c.content)
		want := path + c.want
		if !strings.HasPrefix(c.want, ":") {
			want = c.want
		}
		bad = append(bad, testproc.BadFlag{Args: []string{"--config", path}, Flag: want})
	}
	missing := filepath.Join(t.TempDir(), "missing.toml")
	bad = append(bad, testproc.BadFlag{Env: []string{"BERTH_WORKER_CONFIG=" + missing}, Flag: "--config: open " + missing})
	testproc.CheckBadFlags(t, workerBin, 2, []string{"PATH=" + os.Getenv("PATH")}, bad)
}

// --print-config prints every flag with its effective value and source,
// as a file that --config loads back to the same values; the example
// file in deploy/ is such a file.
func TestPrintConfigRoundTripsAndTheExampleLoads(t *testing.T) {
	t.Parallel()
	file := writeConfig(t, "cores = 4\nresource = [\"gpu=2\", \"fpga=1\"]\nkill-grace = \"3s\"\n")
	env := []string{"PATH=" + os.Getenv("PATH"), "BERTH_WORKER_CORES=6", "BERTH_MASTER=http://127.0.0.1:7077"}
	res := testproc.RunBinary(t, workerBin, env, "--config", file, "--kill-grace", "4s", "--print-config")
	if res.Code != 0 {
		t.Fatalf("--print-config: exit %d: %s", res.Code, res.Stderr)
	}
	for _, want := range []string{
		`resource = ["gpu=2", "fpga=1"]`, file + ":2",
		`cores = "6"`, "# $BERTH_WORKER_CORES",
		`kill-grace = "4s"`, "# --kill-grace",
		`master = "http://127.0.0.1:7077"`, "# $BERTH_MASTER",
		`min-free-disk = "64m"`, `log-max-files = 9`, "# default",
	} {
		if !strings.Contains(res.Stdout, want) {
			t.Errorf("--print-config lacks %q:\n%s", want, res.Stdout)
		}
	}
	printed := writeConfig(t, res.Stdout)
	again := testproc.RunBinary(t, workerBin, []string{"PATH=" + os.Getenv("PATH")}, "--config", printed, "--print-config")
	if again.Code != 0 {
		t.Fatalf("the printed config does not load: exit %d: %s", again.Code, again.Stderr)
	}
	if settings(again.Stdout) != settings(res.Stdout) {
		t.Errorf("loaded back, the values changed:\n%s\nthen\n%s", res.Stdout, again.Stdout)
	}
	example, err := filepath.Abs("../../deploy/worker.toml")
	if err != nil {
		t.Fatal(err)
	}
	ex := testproc.RunBinary(t, workerBin, []string{"PATH=" + os.Getenv("PATH")}, "--config", example, "--print-config")
	if ex.Code != 0 || !strings.Contains(ex.Stdout, `work-dir = "/var/lib/berth-worker"`) {
		t.Errorf("deploy/worker.toml: exit %d: %s\n%s", ex.Code, ex.Stderr, ex.Stdout)
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
	out, err := exec.Command(workerBin, "--version", "--config", "/no/such/file", "--cores", "x").Output()
	if err != nil {
		t.Fatalf("--version: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 5 || !strings.HasPrefix(lines[0], "worker ") || !strings.HasPrefix(lines[1], "commit:") ||
		!strings.HasPrefix(lines[2], "commit time:") || !strings.HasPrefix(lines[3], "built:") ||
		lines[4] != "go:          "+runtime.Version()+" "+runtime.GOOS+"/"+runtime.GOARCH {
		t.Errorf("--version printed:\n%s", out)
	}
}
