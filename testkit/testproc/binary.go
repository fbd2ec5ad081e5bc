package testproc

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// MainWithBinary is a TestMain for the tests of a program's main package
// that run the program itself: it builds the package in the current
// directory (the one under test) once, to a temporary file named name, sets
// *bin to its path, runs the tests and removes the build. It returns the
// exit status for os.Exit.
func MainWithBinary(m *testing.M, name string, bin *string) int {
	dir, err := os.MkdirTemp("", "berth-"+name+"-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	if *bin, err = build(dir, name); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// Build builds the main package in the current directory to a file named
// name in the test's temporary directory and returns its path.
func Build(t testing.TB, name string) string {
	t.Helper()
	bin, err := build(t.TempDir(), name)
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

func build(dir, name string) (string, error) {
	bin := filepath.Join(dir, name)
	// go test puts its own toolchain first on the PATH it gives tests.
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		return "", fmt.Errorf("building %s: %v\n%s", name, err, out)
	}
	return bin, nil
}

// Result is what a program that ran to its end printed and how it exited.
type Result struct {
	Stdout, Stderr string
	Code           int
}

// runTimeout bounds one run of a program that should end by itself: ample
// on a loaded machine, yet short of go test's own timeout, so that a hung
// program fails its test instead of the whole run.
const runTimeout = 20 * time.Second

// RunBinary runs bin with args and exactly env (nil: no environment at all,
// not the test's) to its end and returns what it printed and its exit
// status. The test fails if bin cannot start or is still running after
// runTimeout.
func RunBinary(t testing.TB, bin string, env []string, args ...string) Result {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	if cmd.Env == nil {
		cmd.Env = []string{} // exec would pass the test's environment
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	code, err := wait(cmd, runTimeout)
	if err != nil {
		t.Fatalf("%v; stderr:\n%s", err, stderr.String())
	}
	return Result{Stdout: stdout.String(), Stderr: stderr.String(), Code: code}
}

// BadFlag is an invocation a program must refuse: its arguments, what it
// adds to the environment the program otherwise gets, and the flag the
// refusal must name.
type BadFlag struct {
	Env  []string
	Args []string
	Flag string
}

// CheckBadFlags runs bin once for each case, with env followed by the
// case's own, and fails the test for each run that does not exit with
// wantCode or does not name the case's flag on stderr: a user must learn
// which flag to fix. It returns the runs' results, in the order of cases,
// for the caller's own checks.
func CheckBadFlags(t testing.TB, bin string, wantCode int, env []string, cases []BadFlag) []Result {
	t.Helper()
	results := make([]Result, len(cases))
	for i, c := range cases {
		res := RunBinary(t, bin, slices.Concat(env, c.Env), c.Args...)
		if res.Code != wantCode || !strings.Contains(res.Stderr, c.Flag) {
			t.Errorf("%v %v: exit %d, stderr %q; want exit %d naming %s", c.Env, c.Args, res.Code, res.Stderr, wantCode, c.Flag)
		}
		results[i] = res
	}
	return results
}

// HelpFlags runs bin --help and counts how often it lists each flag (a
// line whose first word is --NAME): a flag added twice (the master listed
// --config twice) is then seen.
func HelpFlags(t testing.TB, bin string) map[string]int {
	t.Helper()
	out, err := exec.Command(bin, "--help").CombinedOutput()
	if err != nil {
		t.Fatalf("%s --help: %v\n%s", bin, err, out)
	}
	seen := map[string]int{}
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) > 0 && strings.HasPrefix(f[0], "--") {
			seen[strings.TrimSuffix(f[0], ",")]++
		}
	}
	return seen
}
