// Package testcluster runs berth's real binaries as processes on 127.0.0.x
// for tests, fault injection and the benchmark tool (berthbench): masters
// (a Raft cluster), workers and clients, each with its output in a log
// file, each ended by pid by whoever started it.
package testcluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/berth-cluster/berth/internal/spawn"
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
	err  error     // its exit, once done is closed
	exit time.Time // when Wait returned, once done is closed
}

// ErrExited is what signalling a process that has ended returns.
var ErrExited = errors.New("has exited")

// ProcOptions are the optional settings of Start.
type ProcOptions struct {
	Env []string // added to the environment
	// UID and GID, when UID is not 0, run the process as that user (the
	// caller must be root). Used to tell the processes' sockets apart.
	UID, GID uint32
	// CleanEnv gives the process Env alone, nothing of this process's
	// environment: a benchmark's daemons get only the flags it prints.
	CleanEnv bool
	// Stdin, when set, is what the process reads on its standard input
	// (a shell's commands); else it reads nothing (/dev/null).
	Stdin string
}

// Start runs path with args, its output appended to logPath. The process is
// killed by pid when the host cleans up, whatever happened; and it is started
// from package spawn's thread with Pdeathsig, so that it dies with this
// process even when that never cleans up: a test binary killed by -timeout,
// an interrupted run, a benchmark tool SIGKILLed.
func Start(h Host, name, path, logPath string, args []string, opt ProcOptions) (*Proc, error) {
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(path, args...)
	cmd.Stdout, cmd.Stderr = f, f
	if opt.Stdin != "" {
		cmd.Stdin = strings.NewReader(opt.Stdin)
	}
	if !opt.CleanEnv {
		cmd.Env = os.Environ()
	}
	cmd.Env = append(cmd.Env, opt.Env...)
	cmd.SysProcAttr = spawn.Attr()
	if opt.UID != 0 {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: opt.UID, Gid: opt.GID}
	}
	if err := spawn.Start(context.Background(), cmd, nil); err != nil {
		f.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &Proc{Name: name, Log: logPath, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		p.exit = time.Now()
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

// ExitedAt is when the process was seen to end (its Wait returned), once
// Done is closed.
func (p *Proc) ExitedAt() time.Time {
	<-p.done
	return p.exit
}

// Signal sends sig to the process, by pid; ErrExited once it has ended (its
// pid may then be someone else's).
func (p *Proc) Signal(sig syscall.Signal) error {
	if p.Exited() {
		return fmt.Errorf("%s %w", p.Name, ErrExited)
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
// it kills it and says so. ErrExited: it had ended already.
func (p *Proc) Stop(timeout time.Duration) error {
	if err := p.Signal(syscall.SIGTERM); err != nil {
		return err
	}
	select {
	case <-p.done:
		return nil
	case <-time.After(timeout):
		// SIGQUIT first: a Go process writes its goroutines into its log.
		_ = p.Signal(syscall.SIGQUIT)
		select {
		case <-p.done:
		case <-time.After(2 * time.Second):
		}
		p.Kill()
		return fmt.Errorf("%s did not exit within %s of SIGTERM (goroutines in its log, after SIGQUIT)", p.Name, timeout)
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
	// PKI is the CA every cluster of these binaries uses (Build makes it
	// in dir/tls); nil: each cluster makes its own.
	PKI *PKI
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
	pki, err := NewPKI(filepath.Join(dir, "tls"))
	if err != nil {
		return Binaries{}, err
	}
	return Binaries{
		Master: filepath.Join(dir, "master"),
		Worker: filepath.Join(dir, "worker"),
		Berth:  filepath.Join(dir, "berth"),
		PKI:    pki,
	}, nil
}
