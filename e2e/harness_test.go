// Package e2e runs berth's real binaries as processes on 127.0.0.x, kills
// them with real signals and checks what a user would see through the API.
//
// The binaries are built once per test run (without the race detector; the
// tests themselves run under it). Every process a test starts is killed by
// pid when the test ends, whatever happened.
package e2e

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/berth-cluster/berth/client"
	"github.com/berth-cluster/berth/wire"
)

// bin holds the paths of the built binaries.
var bin struct {
	master, worker, berth, pi string
}

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "berth-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	build := exec.Command("go", "build", "-o", dir+"/", "../cmd/master", "../cmd/worker", "../cmd/berth")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	pi := exec.Command("go", "build", "-o", filepath.Join(dir, "pi"), "../examples/pi")
	pi.Stdout, pi.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err == nil {
		err = pi.Run()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "building binaries:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	bin.master, bin.worker = filepath.Join(dir, "master"), filepath.Join(dir, "worker")
	bin.berth, bin.pi = filepath.Join(dir, "berth"), filepath.Join(dir, "pi")
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// secret is the cluster secret every test cluster uses.
const secret = "e2e-secret"

// proc is one process a test started.
type proc struct {
	t    *testing.T
	name string
	cmd  *exec.Cmd
	log  string // path of its combined stdout and stderr
	done chan struct{}
	err  error // its exit, once done is closed
}

// start runs path with args; its output goes to a file in the test's temp
// dir, dumped into the test log if the test fails.
func start(t *testing.T, name, path string, args []string, env ...string) *proc {
	t.Helper()
	logPath := filepath.Join(t.TempDir(), name+".log")
	f, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(path, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Env = append(os.Environ(), env...)
	if err := cmd.Start(); err != nil {
		f.Close()
		t.Fatalf("starting %s: %v", name, err)
	}
	p := &proc{t: t, name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		f.Close()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.kill()
		if t.Failed() {
			data, _ := os.ReadFile(logPath)
			t.Logf("---- %s (pid %d) log ----\n%s", name, cmd.Process.Pid, tail(data, 6000))
		}
	})
	return p
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// signal sends sig to the process, by pid.
func (p *proc) signal(sig syscall.Signal) {
	p.t.Helper()
	if err := syscall.Kill(p.pid(), sig); err != nil && !p.exited() {
		p.t.Fatalf("signal %v to %s: %v", sig, p.name, err)
	}
}

// kill sends SIGKILL (SIGCONT first, in case it is stopped) and waits.
func (p *proc) kill() {
	if p.exited() {
		return
	}
	syscall.Kill(p.pid(), syscall.SIGCONT)
	syscall.Kill(p.pid(), syscall.SIGKILL)
	<-p.done
}

// stop sends SIGTERM and waits for the process to exit, up to timeout.
func (p *proc) stop(timeout time.Duration) error {
	p.t.Helper()
	p.signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return p.err
	case <-time.After(timeout):
		p.t.Fatalf("%s did not exit within %s of SIGTERM", p.name, timeout)
		return nil
	}
}

// logContains reports whether the process's log matches re.
func (p *proc) logContains(re string) bool {
	data, _ := os.ReadFile(p.log)
	return regexp.MustCompile(re).Match(data)
}

// logLines returns the lines of the process's log.
func (p *proc) logLines() []string {
	f, err := os.Open(p.log)
	if err != nil {
		return nil
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	return lines
}

// eventually polls cond every 20 ms until it returns nil or timeout passes;
// then the test fails with cond's last error.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not true within %s: %v", what, timeout, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

var portMu sync.Mutex

// freePort returns a TCP port free on ip now.
func freePort(t *testing.T, ip string) int {
	t.Helper()
	portMu.Lock()
	defer portMu.Unlock()
	l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// masterProc is a running master.
type masterProc struct {
	*proc
	id, url, raftAddr, dataDir string
	args                       []string
}

// masterOpts describe a master to start.
type masterOpts struct {
	ip       string   // 127.0.0.x; default 127.0.0.1
	id       string   // --node-id
	dataDir  string   // default: a new temp dir
	raftPort int      // with peers: this master's Raft port
	peers    string   // --peers, for Raft
	extra    []string // more flags
}

// startMaster starts a master and waits until it answers /healthz.
func startMaster(t *testing.T, o masterOpts) *masterProc {
	t.Helper()
	if o.ip == "" {
		o.ip = "127.0.0.1"
	}
	if o.dataDir == "" {
		o.dataDir = t.TempDir()
	}
	port := freePort(t, o.ip)
	args := []string{"--host", o.ip, "--port", strconv.Itoa(port), "--data-dir", o.dataDir, "--log-level", "debug"}
	if o.id != "" {
		args = append(args, "--node-id", o.id)
	}
	mp := &masterProc{id: o.id, url: fmt.Sprintf("http://%s:%d", o.ip, port), dataDir: o.dataDir}
	if o.peers != "" {
		mp.raftAddr = net.JoinHostPort(o.ip, strconv.Itoa(o.raftPort))
		args = append(args, "--peers", o.peers, "--raft-addr", mp.raftAddr)
	}
	args = append(args, o.extra...)
	mp.args = args
	mp.proc = start(t, "master-"+orDefault(o.id, o.ip), bin.master, args, "BERTH_SECRET="+secret)
	waitHealthy(t, mp.proc, mp.url)
	return mp
}

// restart starts the master again with the same flags and data.
func (m *masterProc) restart(t *testing.T) {
	t.Helper()
	m.proc = start(t, "master-"+orDefault(m.id, "restarted"), bin.master, m.args, "BERTH_SECRET="+secret)
	waitHealthy(t, m.proc, m.url)
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

func waitHealthy(t *testing.T, p *proc, url string) {
	t.Helper()
	eventually(t, 20*time.Second, p.name+" healthy", func() error {
		if p.exited() {
			t.Fatalf("%s exited: %v", p.name, p.err)
		}
		resp, err := httpGet(url + "/healthz")
		if err != nil {
			return err
		}
		if resp != 200 {
			return fmt.Errorf("status %d", resp)
		}
		return nil
	})
}

// workerProc is a running worker.
type workerProc struct {
	*proc
	workDir string
}

// startWorker starts a worker for the masters and waits until it listens.
func startWorker(t *testing.T, masters []string, cores int, memory string, extra ...string) *workerProc {
	t.Helper()
	dir := t.TempDir()
	args := append([]string{"--master", strings.Join(masters, ","), "--cores", strconv.Itoa(cores), "--memory", memory,
		"--work-dir", dir, "--kill-grace", "2s", "--log-level", "debug"}, extra...)
	w := &workerProc{workDir: dir}
	w.proc = start(t, fmt.Sprintf("worker-%d", time.Now().UnixNano()%100000), bin.worker, args, "BERTH_SECRET="+secret)
	return w
}

// newClient returns an API client for the masters.
func newClient(t *testing.T, masters ...string) *client.Client {
	t.Helper()
	c, err := client.New(masters, secret, client.WithRetryBudget(20*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// cluster fetches the cluster status, the leader's when one answers (with a
// short deadline).
func cluster(t *testing.T, c *client.Client) (wire.ClusterStatus, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return c.LeaderCluster(ctx)
}

// aliveWorkers waits until the leader reports n ALIVE workers and returns
// the status.
func aliveWorkers(t *testing.T, c *client.Client, n int, timeout time.Duration) wire.ClusterStatus {
	t.Helper()
	var st wire.ClusterStatus
	eventually(t, timeout, fmt.Sprintf("%d ALIVE workers", n), func() error {
		var err error
		st, err = cluster(t, c)
		if err != nil {
			return err
		}
		if st.View != wire.ViewLeader || st.Status != wire.MasterAlive {
			return fmt.Errorf("answer from %s (%s, %s)", st.MasterID, st.View, st.Status)
		}
		alive := 0
		for _, w := range st.Workers {
			if w.State == wire.WorkerAlive {
				alive++
			}
		}
		if alive != n {
			return fmt.Errorf("%d ALIVE workers", alive)
		}
		return nil
	})
	return st
}

// appStatus finds an app in a cluster status.
func appStatus(st wire.ClusterStatus, id string) (wire.AppStatus, bool) {
	for _, a := range append(st.ActiveApps, st.CompletedApps...) {
		if a.ID == id {
			return a, true
		}
	}
	return wire.AppStatus{}, false
}

// executorsIn returns an app's executors in the given state.
func executorsIn(a wire.AppStatus, state wire.ExecutorState) []wire.ExecutorStatus {
	var out []wire.ExecutorStatus
	for _, e := range a.Executors {
		if e.State == state {
			out = append(out, e)
		}
	}
	return out
}

// pidsOf returns the pids of processes whose command line contains marker
// (a string only the test's processes carry).
func pidsOf(marker string) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !strings.Contains(string(cmdline), marker) {
			continue
		}
		state, ppid := procStat(pid)
		if state == "Z" {
			continue // exited, waiting to be reaped
		}
		// A process forked but not yet exec'd carries its parent's command
		// line (a shell starting `sleep`): it is the parent, not another.
		if parent, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(ppid), "cmdline")); err == nil && string(parent) == string(cmdline) {
			continue
		}
		pids = append(pids, pid)
	}
	return pids
}

// procStat returns a process's state letter and parent pid from
// /proc/PID/stat ("", 0 if it is gone). The command name, in parentheses,
// may hold spaces: the fields are counted after its closing one.
func procStat(pid int) (state string, ppid int) {
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return "", 0
	}
	i := strings.LastIndexByte(string(stat), ')')
	if i < 0 {
		return "", 0
	}
	fields := strings.Fields(string(stat[i+1:]))
	if len(fields) < 2 {
		return "", 0
	}
	ppid, _ = strconv.Atoi(fields[1])
	return fields[0], ppid
}

// httpGet returns the status of an unauthenticated GET.
func httpGet(url string) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req, _ := httpNewRequest(ctx, "GET", url)
	resp, err := httpDefault.Do(req)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}
