package worker

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"github.com/berth-cluster/berth/internal/spawn"
)

// startProcess starts cmd from the process's one spawner thread (package
// spawn: Pdeathsig only works from a thread that outlives every child), and
// calls started with its pid at once, on that thread, before any hand-off
// to another goroutine (the child runs already and may start children of
// its own: the guardian must know its group as soon as possible).
func startProcess(ctx context.Context, cmd *exec.Cmd, started func(pid int)) error {
	return spawn.Start(ctx, cmd, started)
}

// sysProcAttr puts a child in its own process group (so that a kill reaches
// what it started, and a Ctrl-C at the worker's terminal does not) and, on
// Linux, has the kernel SIGKILL it when the worker dies: see spawn.Attr.
// With --run-as, it runs as its app's or driver's identity id.
func (w *Worker) sysProcAttr(id identity) *syscall.SysProcAttr {
	a := spawn.Attr()
	a.Credential = w.cfg.runAs.credential(id)
	return a
}

// inheritedEnv is all a child gets from the worker's own environment:
// where programs are (JAVA_HOME, for a Spark executor's java), none of
// the worker's credentials.
var inheritedEnv = []string{"PATH", "HOME", "TMPDIR", "LANG", "JAVA_HOME"}

// buildEnv is the child's environment: inheritedEnv from the worker, then
// the request's env, then berth's variables, each layer winning over the
// previous one. berth's come last because they are facts about this launch
// (its id, cores, worker) that an app's env must not be able to falsify.
// Sorted, for reproducible launches.
func buildEnv(berth, request map[string]string) []string {
	m := map[string]string{}
	for _, k := range inheritedEnv {
		if v, ok := os.LookupEnv(k); ok {
			m[k] = v
		}
	}
	for k, v := range request {
		m[k] = v
	}
	for k, v := range berth {
		m[k] = v
	}
	env := make([]string, 0, len(m))
	for k, v := range m {
		env = append(env, k+"="+v)
	}
	sort.Strings(env)
	return env
}

// getenv returns the value of key in env ("k=v" entries).
func getenv(env []string, key string) string {
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok && k == key {
			return v
		}
	}
	return ""
}

// setEnv returns env ("k=v" entries) with key set to v, in a new slice.
func setEnv(env []string, key, v string) []string {
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if k, _, _ := strings.Cut(kv, "="); k != key {
			out = append(out, kv)
		}
	}
	return append(out, key+"="+v)
}

// substitute replaces the placeholders in argv, in one pass (a value that
// contains a placeholder is not expanded again).
func substitute(argv []string, pairs ...string) []string {
	r := strings.NewReplacer(pairs...)
	out := make([]string, len(argv))
	for i, a := range argv {
		out[i] = r.Replace(a)
	}
	return out
}

// substituteValues is env with the placeholders replaced in its values
// (names are left alone), in a new map.
func substituteValues(env map[string]string, pairs ...string) map[string]string {
	if len(env) == 0 {
		return env
	}
	r := strings.NewReplacer(pairs...)
	out := make(map[string]string, len(env))
	for k, v := range env {
		out[k] = r.Replace(v)
	}
	return out
}

// errNotFound: no executable of that name in the child's PATH.
var errNotFound = errors.New("command not found")

// lookPath resolves a command name like execvp would, but in the child's PATH
// rather than the worker's, so that an app's env can set it. Relative PATH
// entries are skipped: they would depend on the work directory's contents.
// A name with a slash is used as is (relative to the child's work directory).
func lookPath(name, path string) (string, error) {
	if strings.Contains(name, "/") {
		return name, nil
	}
	notExec := ""
	for _, dir := range filepath.SplitList(path) {
		if !filepath.IsAbs(dir) {
			continue
		}
		p := filepath.Join(dir, name)
		st, err := os.Stat(p)
		if err != nil || !st.Mode().IsRegular() {
			continue
		}
		if st.Mode()&0o111 != 0 {
			return p, nil
		}
		if notExec == "" {
			notExec = p // like a shell: found but not executable is 126
		}
	}
	if notExec != "" {
		return notExec, nil
	}
	return "", fmt.Errorf("%q: %w in PATH %q", name, errNotFound, path)
}

// startFailure maps an error starting a command to the exit code a shell
// would report (127 not found, 126 found but not run), or 0 when the
// machine, not the command, failed it (then there is no exit code, and the
// worker, not the app, is blamed). Only a shortage of the worker's own
// resources (processes, memory, descriptors) is the machine's: every other
// errno of execve is about the path or file the app named (a component
// that is not a directory, a loop of links, a name too long, a file open
// for writing, an environment too big), and a tenant that names such a
// path three times must not bench the worker for everyone (HEALTH.md).
func startFailure(err error) int {
	switch {
	case errors.Is(err, errNotFound), errors.Is(err, fs.ErrNotExist):
		return 127
	case machineShortage(err):
		return 0
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return 126
	}
	return 0
}

// machineShortage reports whether err is the worker running out of
// something a fork needs.
func machineShortage(err error) bool {
	for _, e := range []syscall.Errno{syscall.EAGAIN, syscall.ENOMEM, syscall.EMFILE, syscall.ENFILE, syscall.ENOSPC} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}
