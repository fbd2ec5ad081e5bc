package config

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/urfave/cli/v2"
)

// got is what an app saw once its config was loaded.
type got struct {
	name    string
	port    int
	timeout time.Duration
	verbose bool
	tags    []string
	ratio   float64
	printed string
	err     error
}

// runApp runs a small app with one flag of each kind through Load, with
// args and the process's environment (set by the test).
func runApp(t *testing.T, args ...string) got {
	t.Helper()
	var g got
	var out bytes.Buffer
	app := &cli.App{
		Name:   "demo",
		Writer: &out,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "name", Value: "default-name", EnvVars: []string{"DEMO_NAME"}},
			&cli.IntFlag{Name: "port", Value: 7077, EnvVars: []string{"DEMO_PORT"}},
			&cli.DurationFlag{Name: "worker-timeout", Value: time.Minute, EnvVars: []string{"DEMO_WORKER_TIMEOUT"}},
			&cli.BoolFlag{Name: "verbose", EnvVars: []string{"DEMO_VERBOSE"}},
			&cli.StringSliceFlag{Name: "tag", EnvVars: []string{"DEMO_TAGS"}},
			&cli.Float64Flag{Name: "ratio", Value: 0.5},
			&cli.StringFlag{Name: "secret", EnvVars: []string{"DEMO_SECRET"}},
			Flag("DEMO_CONFIG"),
			PrintFlag(),
		},
		ExitErrHandler: func(*cli.Context, error) {},
		Action: func(cx *cli.Context) error {
			src, err := Load(cx, append([]string{"demo"}, args...))
			if err != nil {
				return err
			}
			if cx.Bool("print-config") {
				if err := src.Print(&out, cx); err != nil {
					return err
				}
			}
			g.name, g.port, g.timeout = cx.String("name"), cx.Int("port"), cx.Duration("worker-timeout")
			g.verbose, g.tags, g.ratio = cx.Bool("verbose"), cx.StringSlice("tag"), cx.Float64("ratio")
			if g.port < 0 {
				return src.Annotate(fmt.Errorf("--port %d: must not be negative\n--verbose: fine", g.port))
			}
			return nil
		},
	}
	g.err = app.Run(append([]string{"demo"}, args...))
	g.printed = out.String()
	return g
}

func writeFile(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "demo.toml")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

const fullFile = `# every kind of value
name = "from-file"
port = 7100
worker-timeout = "90s"
verbose = true
tag = ["a", "b"]
ratio = 0.25
`

func TestFileSetsEveryKindOfFlag(t *testing.T) {
	g := runApp(t, "--config", writeFile(t, fullFile))
	if g.err != nil {
		t.Fatal(g.err)
	}
	if g := runApp(t, "--config", writeFile(t, "name = 16\n")); g.err != nil || g.name != "16" {
		t.Errorf("an integer for a text flag: %+v", g)
	}
	if g.name != "from-file" || g.port != 7100 || g.timeout != 90*time.Second || !g.verbose ||
		strings.Join(g.tags, ",") != "a,b" || g.ratio != 0.25 {
		t.Errorf("got %+v", g)
	}
}

// Flag beats environment beats file beats default, for each kind of flag.
func TestPrecedence(t *testing.T) {
	path := writeFile(t, fullFile)
	t.Setenv("DEMO_PORT", "7200")
	t.Setenv("DEMO_WORKER_TIMEOUT", "2m")
	t.Setenv("DEMO_TAGS", "env")
	g := runApp(t, "--config", path, "--port", "7300", "--tag", "argv")
	if g.err != nil {
		t.Fatal(g.err)
	}
	if g.port != 7300 {
		t.Errorf("port %d: want the flag's 7300 over the environment's and the file's", g.port)
	}
	if g.timeout != 2*time.Minute {
		t.Errorf("worker-timeout %v: want the environment's 2m over the file's", g.timeout)
	}
	if strings.Join(g.tags, ",") != "argv" {
		t.Errorf("tag %v: want the flag's alone", g.tags)
	}
	if g.name != "from-file" {
		t.Errorf("name %q: want the file's over the default", g.name)
	}
	// Without the file, the default.
	os.Unsetenv("DEMO_WORKER_TIMEOUT")
	if g := runApp(t); g.err != nil || g.name != "default-name" || g.timeout != time.Minute {
		t.Errorf("no file: %+v", g)
	}
	// The file through the environment.
	t.Setenv("DEMO_CONFIG", path)
	if g := runApp(t); g.err != nil || g.name != "from-file" {
		t.Errorf("DEMO_CONFIG: %+v", g)
	}
}

// Each bad file is refused naming the file, the line and the key.
func TestBadFilesAreRefusedNamingFileLineAndKey(t *testing.T) {
	cases := []struct{ content, want string }{
		{"name = \"x\"\nworker-timout = \"60s\"\n", `:2: unknown key "worker-timout": demo has no flag --worker-timout (did you mean worker-timeout?)`},
		{"name = \"x\"\nbogus = 1\n", `:2: unknown key "bogus"`},
		{"port = \"7077\"\n", `:1: key port: want an integer, not the string "7077"`},
		{"port = 7077.5\n", `:1: key port: want an integer, not the float 7077.5`},
		{"worker-timeout = 60\n", `:1: key worker-timeout: want a duration as a string`},
		{"\n\nworker-timeout = \"soon\"\n", `:3: key worker-timeout: "soon" is not a duration`},
		{"verbose = \"yes\"\n", `:1: key verbose: want true or false`},
		{"tag = \"a\"\n", `:1: key tag: want an array of strings`},
		{"tag = [\"a\", 2]\n", `:1: key tag: element 2: want a string, not the integer 2`},
		{"name = \"a\"\nport = 1\nname = \"b\"\n", `:3: key name given twice (first on line 1)`},
		{"name = \"a\"\n[server]\nport = 1\n", `:2: [server]: the file has no sections`},
		{"server.port = 1\n", `:1: unknown key "server.port"`},
		{"port = 99999999999999999999\n", `:1:8: decimal number is too large`},
		{"name = \n", `:1:8:`},
		{"config = \"other.toml\"\n", `:1: key config: not a setting of a file`},
		{"name = 1979-05-27\n", `:1: key name: want a string, not a date or time`},
		{"name = false\n", `:1: key name: want a string, not the boolean false`},
		{"name = [\"a\"]\n", `:1: key name: want a string, not an array`},
	}
	for _, c := range cases {
		path := writeFile(t, c.content)
		g := runApp(t, "--config", path)
		if g.err == nil || !strings.Contains(g.err.Error(), path+c.want) {
			t.Errorf("%q: %v; want %q", c.content, g.err, path+c.want)
		}
	}
	// A key the environment overrides is checked all the same.
	t.Setenv("DEMO_PORT", "7200")
	if g := runApp(t, "--config", writeFile(t, "port = \"x\"\n")); g.err == nil || !strings.Contains(g.err.Error(), "key port") {
		t.Errorf("a bad key the environment overrides: %v", g.err)
	}
	for _, path := range []string{filepath.Join(t.TempDir(), "missing.toml"), t.TempDir()} {
		if g := runApp(t, "--config", path); g.err == nil || !strings.Contains(g.err.Error(), "--config") || !strings.Contains(g.err.Error(), path) {
			t.Errorf("--config %s: %v", path, g.err)
		}
	}
	big := writeFile(t, strings.Repeat("# padding\n", maxFileSize/10+1))
	if g := runApp(t, "--config", big); g.err == nil || !strings.Contains(g.err.Error(), "larger than") {
		t.Errorf("a huge file: %v", g.err)
	}
}

// A value the file set that the binary later refuses is named with its
// file, line and key; one from elsewhere is not.
func TestAnnotateNamesTheFileOfARefusedValue(t *testing.T) {
	path := writeFile(t, "name = \"n\"\nport = -1\n")
	g := runApp(t, "--config", path)
	want := path + ":2: key port: --port -1: must not be negative\n--verbose: fine"
	if g.err == nil || g.err.Error() != want {
		t.Errorf("got %v\nwant %s", g.err, want)
	}
	g = runApp(t, "--config", writeFile(t, "port = 1\n"), "--port", "-1")
	if g.err == nil || strings.Contains(g.err.Error(), ".toml") {
		t.Errorf("a refused flag from the command line: %v", g.err)
	}
	if !namesFlag("bad --port-range x", "port-range") || namesFlag("bad --port-range x", "port") || !namesFlag("--port", "port") {
		t.Error("namesFlag")
	}
	inner := errors.New("--port: inner")
	s := &Sources{path: "f.toml", flags: []cli.Flag{&cli.IntFlag{Name: "port"}}, from: map[string]from{"port": {line: 3}}}
	if err := s.Annotate(inner); !errors.Is(err, inner) || err.Error() != "f.toml:3: key port: --port: inner" {
		t.Errorf("Annotate: %v", err)
	}
}

// --print-config prints what a file loads back to the same values, each
// with its source, and never the secret.
func TestPrintConfigRoundTrips(t *testing.T) {
	t.Setenv("DEMO_SECRET", "hunter2")
	t.Setenv("DEMO_NAME", "tab\there \"quoted\" \\ \x01")
	g := runApp(t, "--config", writeFile(t, "port = 7100\ntag = [\"x,y\", \"z\"]\n"), "--worker-timeout", "95s", "--print-config")
	if g.err != nil {
		t.Fatal(g.err)
	}
	for _, want := range []string{
		`port = 7100`, `.toml:1`, `worker-timeout = "1m35s"`, "# --worker-timeout",
		`name = "tab\u0009here \"quoted\" \\ \u0001"`, "# $DEMO_NAME",
		`tag = ["x", "y", "z"]`, `verbose = false`, `ratio = 0.5 `, "# default", "# secret: set ($DEMO_SECRET), not shown",
	} {
		if !strings.Contains(g.printed, want) {
			t.Errorf("printed config lacks %q:\n%s", want, g.printed)
		}
	}
	if strings.Contains(g.printed, "hunter2") {
		t.Errorf("the secret is printed:\n%s", g.printed)
	}
	os.Unsetenv("DEMO_NAME")
	os.Unsetenv("DEMO_SECRET")
	again := runApp(t, "--config", writeFile(t, g.printed), "--print-config")
	if again.err != nil {
		t.Fatalf("the printed config does not load: %v\n%s", again.err, g.printed)
	}
	if values(again.printed) != values(g.printed) {
		t.Errorf("round trip changed values:\n%s\nthen\n%s", g.printed, again.printed)
	}
	if again.name != "tab\there \"quoted\" \\ \x01" || again.timeout != 95*time.Second || again.port != 7100 {
		t.Errorf("loaded back: %+v", again)
	}
}

// values is a printed config without its comments.
func values(printed string) string {
	var out []string
	for _, l := range strings.Split(printed, "\n") {
		if v, _, _ := strings.Cut(l, " # "); !strings.HasPrefix(l, "#") && v != "" {
			out = append(out, strings.TrimSpace(v))
		}
	}
	return strings.Join(out, "\n")
}

func TestArgvFlags(t *testing.T) {
	flags := []cli.Flag{&cli.StringFlag{Name: "master"}, &cli.BoolFlag{Name: "json"}, &cli.IntFlag{Name: "port"}}
	got := argvFlags(flags, []string{"berth", "--master", "--port", "-json", "--port=3", "status", "--json"})
	if !got["master"] || !got["json"] || !got["port"] || len(got) != 3 {
		t.Errorf("argvFlags: %v", got)
	}
	// --master's value is "--port", so port is only set by --port=3.
	got = argvFlags(flags, []string{"berth", "--master", "x", "status", "--port", "1"})
	if !got["master"] || got["port"] {
		t.Errorf("argvFlags stops at the subcommand: %v", got)
	}
}
