package worker

import (
	"bufio"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The guardian makes every process a worker started die with the worker,
// grandchildren included. Pdeathsig only reaches the worker's direct
// children: an executor that runs `sh -c 'sleep 600'` would leave the sleep
// behind when the worker is SIGKILLed. So the worker starts a guardian, its
// own binary re-executed in a session of its own, reading from a pipe whose
// other end only the worker holds. The worker tells it every child's process
// group as the child starts (+pgid) and once the group has been swept
// (-pgid). When the worker dies, however it dies, the pipe reaches EOF and
// the guardian SIGKILLs every group still listed. A process group id is not
// reused while any member lives, and a group is only unlisted after it was
// killed, so the guardian never hits an unrelated group.

// guardianEnv, set to 1, makes the binary run as a guardian.
const guardianEnv = "BERTH_WORKER_GUARDIAN"

// RunGuardianIfAsked runs the guardian and exits if this process was started
// as one; otherwise it returns at once. The worker's main (and a test binary
// that runs workers) calls it first thing.
func RunGuardianIfAsked() {
	if os.Getenv(guardianEnv) == "1" {
		os.Exit(runGuardian(os.Stdin))
	}
}

// runGuardian reads +pgid / -pgid lines (and "c<dir>", the worker's cgroup
// parents, and "s<dev> <ino> <born> <path>", its names' socket) until EOF, then
// kills what is left: the listed process groups, and every process in the
// cgroups under the parents (what left its group, setsid), whose empty
// groups it then removes; and it removes the socket if it is still the
// worker's.
func runGuardian(r io.Reader) int {
	groups := map[int]bool{}
	var cgroupParents, sockets []string
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		if len(line) < 2 {
			continue
		}
		switch line[0] {
		case 'c':
			cgroupParents = append(cgroupParents, line[1:])
			continue
		case 's':
			sockets = append(sockets, line[1:])
			continue
		}
		pgid, err := strconv.Atoi(line[1:])
		if err != nil || pgid <= 1 {
			continue
		}
		switch line[0] {
		case '+':
			groups[pgid] = true
		case '-':
			delete(groups, pgid)
		}
	}
	for pgid := range groups {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
	}
	killCgroups(cgroupParents)
	for _, s := range sockets {
		var id socketID
		var path string
		if n, _ := fmt.Sscanf(s, "%d %d %d %s", &id.dev, &id.ino, &id.born, &path); n == 4 {
			removeIfSame(path, id)
		}
	}
	return 0
}

// removeSocketAtExit has the guardian remove the socket at path, the file
// id, once the worker is gone, however it went (a SIGKILLed worker
// cannot): stale sockets stay out of /run/systemd/userdb.
func (g *guardian) removeSocketAtExit(path string, id socketID) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.pipe != nil && !strings.ContainsAny(path, " \n") {
		fmt.Fprintf(g.pipe, "s%d %d %d %s\n", id.dev, id.ino, id.born, path)
	}
}

// cgroupParent lists a cgroup parent directory with the guardian.
func (g *guardian) cgroupParent(dir string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.pipe != nil {
		fmt.Fprintf(g.pipe, "c%s\n", dir)
	}
}

// guardian is the worker's end of the pipe.
type guardian struct {
	mu   sync.Mutex
	pipe io.WriteCloser // nil when no guardian runs
	pid  int            // the guardian's; 0 when none runs
	done chan struct{}
	log  *slog.Logger
}

// startGuardian starts the guardian. Without one (the binary cannot be
// re-executed) children still die with the worker, grandchildren may not;
// the worker says so and goes on.
func startGuardian(log *slog.Logger) *guardian {
	g := &guardian{log: log, done: make(chan struct{})}
	exe, err := os.Executable()
	if err == nil {
		var r *os.File
		r, g.pipe, err = os.Pipe()
		if err == nil {
			cmd := exec.Command(exe)
			cmd.Env = []string{guardianEnv + "=1", "GORACE=atexit_sleep_ms=0"}
			cmd.Stdin = r
			cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} // outlives the worker's group
			err = cmd.Start()
			r.Close()
			if err == nil {
				g.pid = cmd.Process.Pid
				go func() { _ = cmd.Wait(); close(g.done) }()
				return g
			}
			g.pipe.Close()
		}
	}
	log.Warn("no guardian: processes started by executors may outlive a killed worker", "err", err)
	g.pipe = nil
	close(g.done)
	return g
}

func (g *guardian) send(op byte, pgid int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.pipe == nil {
		return
	}
	if _, err := fmt.Fprintf(g.pipe, "%c%d\n", op, pgid); err != nil {
		g.log.Warn("guardian gone: processes started by executors may outlive a killed worker", "err", err)
		g.pipe.Close()
		g.pipe = nil
	}
}

// track lists a child's process group.
func (g *guardian) track(pgid int) { g.send('+', pgid) }

// untrack unlists a group that was swept.
func (g *guardian) untrack(pgid int) { g.send('-', pgid) }

// stop ends the guardian (it kills whatever is still listed) and waits a
// little for it.
func (g *guardian) stop() {
	g.mu.Lock()
	if g.pipe != nil {
		g.pipe.Close()
		g.pipe = nil
	}
	g.mu.Unlock()
	select {
	case <-g.done:
	case <-time.After(2 * time.Second):
	}
}
