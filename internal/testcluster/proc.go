// Package testcluster runs berth's real binaries as processes on 127.0.0.x
// for tests and fault injection: masters (a Raft cluster), workers and
// clients, each with its output in a log file, each ended by pid by
// whoever started it.
package testcluster

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"syscall"
	"time"
)

// Host is where processes report and register their cleanup: a
// *testing.T, or a command's own implementation.
type Host interface {
	Cleanup(func())
	Logf(format string, args ...any)
}

// Proc is one process started by Start.
type Proc struct {
	Name string
	Log  string // path of its combined stdout and stderr
	cmd  *exec.Cmd
	done chan struct{}
	err  error // its exit, once done is closed
}

// ProcOptions are the optional settings of Start.
type ProcOptions struct {
	Env []string // added to the environment
	// UID and GID, when UID is not 0, run the process as that user (the
	// caller must be root). Used to tell the processes' sockets apart.
	UID, GID uint32
}

// Start runs path with args, its output appended to logPath. The process is
// killed by pid when the host cleans up, whatever happened.
func Start(h Host, name, path, logPath string, args []string, opt ProcOptions) (*Proc, error) {
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(path, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Env = append(os.Environ(), opt.Env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if opt.UID != 0 {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: opt.UID, Gid: opt.GID}
	}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &Proc{Name: name, Log: logPath, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		f.Close()
		close(p.done)
	}()
	h.Cleanup(p.Kill)
	return p, nil
}

// Pid is the process id.
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

// Exited reports whether the process has ended.
func (p *Proc) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Done is closed when the process has ended; Err then says how.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Err is the process's exit, once Done is closed.
func (p *Proc) Err() error {
	<-p.done
	return p.err
}

// Signal sends sig to the process, by pid.
func (p *Proc) Signal(sig syscall.Signal) error {
	if p.Exited() {
		return fmt.Errorf("%s has exited", p.Name)
	}
	return syscall.Kill(p.Pid(), sig)
}

// Kill sends SIGKILL (SIGCONT first, in case it is stopped) and waits.
func (p *Proc) Kill() {
	if p.Exited() {
		return
	}
	syscall.Kill(p.Pid(), syscall.SIGCONT)
	syscall.Kill(p.Pid(), syscall.SIGKILL)
	<-p.done
}

// Stop sends SIGTERM and waits up to timeout for the process to exit; then
// it kills it and says so.
func (p *Proc) Stop(timeout time.Duration) error {
	if err := p.Signal(syscall.SIGTERM); err != nil {
		return err
	}
	select {
	case <-p.done:
		return nil
	case <-time.After(timeout):
		p.Kill()
		return fmt.Errorf("%s did not exit within %s of SIGTERM", p.Name, timeout)
	}
}

// LogTail returns the last n bytes of the process's log.
func (p *Proc) LogTail(n int) string {
	data, _ := os.ReadFile(p.Log)
	if len(data) > n {
		data = data[len(data)-n:]
	}
	return string(data)
}

// LogMatches returns the lines of the process's log that match re.
func (p *Proc) LogMatches(re *regexp.Regexp) []string {
	data, _ := os.ReadFile(p.Log)
	var out []string
	for _, line := range bytes.Split(data, []byte("\n")) {
		if re.Match(line) {
			out = append(out, string(line))
		}
	}
	return out
}

// Binaries are the paths of the built binaries.
type Binaries struct {
	Master, Worker, Berth string
}

// Build builds the master, worker and berth binaries of the module whose
// root is moduleDir into dir (readable by every user, so that processes
// run as other users can execute them).
func Build(moduleDir, dir string) (Binaries, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Binaries{}, err
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		return Binaries{}, err
	}
	cmd := exec.Command("go", "build", "-o", dir+"/", "./cmd/master", "./cmd/worker", "./cmd/berth")
	cmd.Dir = moduleDir
	if out, err := cmd.CombinedOutput(); err != nil {
		return Binaries{}, fmt.Errorf("building the binaries: %w\n%s", err, out)
	}
	return Binaries{
		Master: filepath.Join(dir, "master"),
		Worker: filepath.Join(dir, "worker"),
		Berth:  filepath.Join(dir, "berth"),
	}, nil
}
