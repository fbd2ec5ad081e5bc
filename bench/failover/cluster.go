package failover

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/berth-cluster/berth/internal/httpx"
	"github.com/berth-cluster/berth/testkit/testcluster"
)

// masterNode is one master: its identity, flags and data survive restarts.
type masterNode struct {
	id, ip, url, raftAddr, dataDir string
	args                           []string
	proc                           *testcluster.Proc
	starts                         int
	cl                             *cluster
}

// workerNode is one worker daemon.
type workerNode struct {
	id, ip, workDir string
	args            []string
	proc            *testcluster.Proc
}

// cluster is a set of masters and workers started by this tool.
type cluster struct {
	name    string
	cfg     *config
	root    string // the work directory: logs/ and slow/ are here
	dir     string // this cluster's data: root/<name>
	ps      *procs
	pki     *testcluster.PKI // Raft runs only over TLS: every process has a certificate
	plain   bool             // a bolt master and its workers without TLS (the secret only), to compare
	api     *httpx.Client    // reads the masters' status
	masters []*masterNode
	workers []*workerNode
	app     *holder // nil without --executors
	// execs are the executor processes of the app, pid → start time, found
	// once they all ran; every round checks they are still the same.
	execs   map[int]uint64
	execIDs []int
}

func newCluster(name string, cfg *config, ps *procs, root string) (*cluster, error) {
	dir := filepath.Join(root, name)
	for _, d := range []string{filepath.Join(root, "logs"), dir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	pki, err := testcluster.NewPKI(filepath.Join(dir, "tls"))
	if err != nil {
		return nil, err
	}
	return &cluster{name: name, cfg: cfg, root: root, dir: dir, ps: ps, pki: pki, api: statusClient(pki, cfg.secret)}, nil
}

// masterIP is the loopback address of master i (0-based): 127.0.0.1, .2, ...
func masterIP(i int) string { return fmt.Sprintf("127.0.0.%d", i+1) }

// workerIP is the loopback address of worker i: 127.0.0.21, .22, ...
func workerIP(i int) string { return fmt.Sprintf("127.0.0.%d", 21+i) }

// startRaftMasters starts n masters replicating through Raft, each on its
// own loopback address, and waits until they answer /healthz.
func (cl *cluster) startRaftMasters(ctx context.Context, n int) error {
	var peers []string
	for i := range n {
		ip := masterIP(i)
		api, err := testcluster.FreePort(ip)
		if err != nil {
			return err
		}
		raft, err := testcluster.FreePort(ip)
		for tries := 0; err == nil && raft == api && tries < 10; tries++ {
			raft, err = testcluster.FreePort(ip)
		}
		if err != nil {
			return err
		}
		m := &masterNode{
			id: fmt.Sprintf("m%d", i+1), ip: ip, url: fmt.Sprintf("https://%s:%d", ip, api),
			raftAddr: fmt.Sprintf("%s:%d", ip, raft), dataDir: filepath.Join(cl.dir, fmt.Sprintf("m%d", i+1)), cl: cl,
		}
		peers = append(peers, m.id+"="+m.raftAddr)
		cl.masters = append(cl.masters, m)
	}
	for _, m := range cl.masters {
		tlsFlags, err := cl.pki.MasterFlags(m.id, m.ip, 0)
		if err != nil {
			return err
		}
		m.args = append(append([]string{
			"--node-id", m.id, "--host", m.ip, "--port", strconv.Itoa(portOf(m.url)),
			"--raft-addr", m.raftAddr, "--peers", strings.Join(peers, ","),
			"--raft-multiplier", strconv.Itoa(cl.cfg.raftMultiplier),
			"--data-dir", m.dataDir,
		}, cl.cfg.commonMasterArgs()...), tlsFlags...)
	}
	return cl.startMasters(ctx)
}

// startBoltMaster starts one master keeping its state in bbolt.
func (cl *cluster) startBoltMaster(ctx context.Context) error {
	ip := masterIP(0)
	api, err := testcluster.FreePort(ip)
	if err != nil {
		return err
	}
	m := &masterNode{id: "b1", ip: ip, url: fmt.Sprintf("https://%s:%d", ip, api), dataDir: filepath.Join(cl.dir, "b1"), cl: cl}
	tlsFlags, err := cl.pki.MasterFlags(m.id, m.ip, 0)
	if err != nil {
		return err
	}
	if cl.plain {
		m.url, tlsFlags = fmt.Sprintf("http://%s:%d", ip, api), nil
	}
	m.args = append([]string{
		"--node-id", m.id, "--host", m.ip, "--port", strconv.Itoa(api),
		"--recovery-mode", "bolt", "--data-dir", m.dataDir,
	}, append(cl.cfg.commonMasterArgs(), tlsFlags...)...)
	cl.masters = append(cl.masters, m)
	return cl.startMasters(ctx)
}

func (cl *cluster) startMasters(ctx context.Context) error {
	for _, m := range cl.masters {
		if err := m.start(); err != nil {
			return err
		}
	}
	for _, m := range cl.masters {
		if err := testcluster.WaitHealthy(ctx, m.proc, m.url, 30*time.Second); err != nil {
			return err
		}
	}
	return nil
}

func portOf(url string) int {
	i := strings.LastIndexByte(url, ':')
	p, _ := strconv.Atoi(url[i+1:])
	return p
}

// start runs the master (again), with the same flags and data; each run
// logs to its own file, logs/<cluster>-<id>.<n>.log.
func (m *masterNode) start() error {
	m.starts++
	logPath := filepath.Join(m.cl.root, "logs", fmt.Sprintf("%s-%s.%d.log", m.cl.name, m.id, m.starts))
	p, err := m.cl.ps.start(m.id, m.cl.cfg.masterBin(), m.args, logPath)
	if err != nil {
		return err
	}
	m.proc = p
	return nil
}

func (m *masterNode) running() bool { return m.proc != nil && !m.proc.Exited() }

// urls are the API addresses of the masters.
func (cl *cluster) urls() []string {
	var out []string
	for _, m := range cl.masters {
		out = append(out, m.url)
	}
	return out
}

// startWorkers starts n workers listing every master, and waits until the
// leader has them all ALIVE.
func (cl *cluster) startWorkers(ctx context.Context, n int) error {
	masters := strings.Join(cl.urls(), ",")
	for i := range n {
		w := &workerNode{id: fmt.Sprintf("w%02d", i+1), ip: workerIP(i)}
		w.workDir = filepath.Join(cl.dir, w.id)
		tlsFlags, err := cl.pki.WorkerFlags(w.id, w.ip, 0)
		if err != nil {
			return err
		}
		w.args = []string{
			"--master", masters, "--secret", cl.cfg.secret, "--host", w.ip, "--port", "0", "--id", w.id,
			"--cores", strconv.Itoa(cl.cfg.workerCores), "--memory", cl.cfg.workerMemory,
			"--work-dir", w.workDir, "--log-level", cl.cfg.logLevel,
		}
		if !cl.plain {
			w.args = append(w.args, tlsFlags...)
		}
		p, err := cl.ps.start(w.id, cl.cfg.workerBin(), w.args, filepath.Join(cl.root, "logs", fmt.Sprintf("%s-%s.log", cl.name, w.id)))
		if err != nil {
			return err
		}
		w.proc = p
		cl.workers = append(cl.workers, w)
	}
	_, _, err := cl.steady(ctx, 60*time.Second, false)
	return err
}

// stop ends the app's stream, then stops workers (SIGTERM: they kill their
// executors) and masters, by pid, and checks that no executor is left.
func (cl *cluster) stop() []string {
	var (
		mu    sync.Mutex
		notes []string
	)
	if cl.app != nil {
		cl.app.cancel()
		select {
		case <-cl.app.done:
		case <-time.After(5 * time.Second):
		}
	}
	var wg sync.WaitGroup
	for _, w := range cl.workers {
		if w.proc != nil && !w.proc.Exited() {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if !stopped(w.proc, 15*time.Second) {
					mu.Lock()
					notes = append(notes, fmt.Sprintf("worker %s did not exit within 15s of SIGTERM; killed", w.id))
					mu.Unlock()
				}
			}()
		}
	}
	wg.Wait()
	for pid, start := range cl.execs {
		if s, ok := procStart(pid); ok && s == start {
			notes = append(notes, fmt.Sprintf("executor process %d outlived its worker; killed", pid))
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
				notes = append(notes, fmt.Sprintf("killing executor process %d: %v", pid, err))
			}
		}
	}
	for _, m := range cl.masters {
		if m.running() {
			_ = m.proc.Stop(10 * time.Second)
		}
	}
	return notes
}
