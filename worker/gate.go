package worker

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
)

// How a process is started. Two things need a shell in front of the
// program:
//   - its cgroup: the worker, as root, writes the process into its group's
//     cgroup.procs. The shell waits at a gate (a pipe on fd 3) until that is
//     done, then execs the program, so that nothing of the program runs
//     outside its group, and the group's files never have to be handed to
//     the tenant (who could then move itself into another's group);
//   - --run-as: the program is looked up in the process's PATH by the
//     shell, as the process's own identity: a lookup by root would follow
//     links in directories the tenant controls.
//
// Otherwise (no cgroup, the worker's own user) the worker looks the
// program up and execs it directly.

const (
	// gatedScript: 125 if the worker closes the gate without a go.
	gatedScript = `read -r go <&3 && [ "$go" = go ] || exit 125; exec "$@" 3<&-`
	execScript  = `exec "$@"`
)

// command is the exec.Cmd of p's attempt in its directory d, and the gate
// to open once it started (nil when it has none). Its output is set by the
// caller.
func (w *Worker) command(p *proc, d *procDir) (*exec.Cmd, *gate, error) {
	env := p.env
	if w.cfg.runAs != nil {
		// Its own, not the worker's, nor one shared with other tenants.
		env = setEnv(setEnv(env, "HOME", d.home()), "TMPDIR", d.home())
	}
	cmd := &exec.Cmd{Args: p.argv, Env: env, Dir: d.home(), SysProcAttr: w.sysProcAttr(d.id)}
	program := p.argv[0]
	if w.cfg.runAs == nil {
		path, err := lookPath(program, getenv(env, "PATH"))
		if err != nil {
			return nil, nil, err
		}
		if p.cg != nil {
			// What exec would refuse is refused here, as exec would (127,
			// 126): once the shell runs, it would be an exit instead.
			if err := checkExecutable(path, cmd.Dir); err != nil {
				return nil, nil, err
			}
		}
		cmd.Path, program = path, path
		if p.cg == nil {
			return cmd, nil, nil
		}
	}
	script := execScript
	var g *gate
	if p.cg != nil {
		var err error
		if g, err = newGate(cmd); err != nil {
			return nil, nil, byWorker(err)
		}
		script = gatedScript
	}
	cmd.Path = "/bin/sh"
	cmd.Args = append([]string{"sh", "-c", script, "berth", program}, p.argv[1:]...)
	return cmd, g, nil
}

// checkExecutable is what execve would say of path, run in dir.
func checkExecutable(path, dir string) error {
	if !filepath.IsAbs(path) {
		path = filepath.Join(dir, path)
	}
	st, err := os.Stat(path)
	switch {
	case err != nil:
		return fmt.Errorf("%s: %w", path, err)
	case !st.Mode().IsRegular() || st.Mode()&0o111 == 0:
		return fmt.Errorf("%s: %w", path, syscall.EACCES)
	}
	return nil
}

// gate holds a starting process in its shell until the worker has put it
// in its cgroup: the shell reads fd 3, the pipe's read end.
type gate struct{ r, w *os.File }

// newGate makes cmd's gate, its fd 3.
func newGate(cmd *exec.Cmd) (*gate, error) {
	if len(cmd.ExtraFiles) != 0 {
		return nil, fmt.Errorf("the gate must be fd 3")
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd.ExtraFiles = []*os.File{r}
	return &gate{r: r, w: w}, nil
}

// started drops the worker's copy of the read end once the child has its
// own.
func (g *gate) started() {
	if g != nil && g.r != nil {
		g.r.Close()
		g.r = nil
	}
}

// close closes the gate without letting the process through: its shell
// exits 125.
func (g *gate) close() {
	if g == nil {
		return
	}
	g.started()
	g.w.Close()
}

// open puts pid in cg, then lets it through.
func (g *gate) open(cg *cgroup, pid int) error {
	defer g.w.Close()
	if err := cg.join(pid); err != nil {
		return err
	}
	_, err := g.w.Write([]byte("go\n"))
	return err
}
