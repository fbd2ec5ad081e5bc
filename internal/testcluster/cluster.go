package testcluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/berth-cluster/berth/wire"
)

// Options describe a cluster to start.
type Options struct {
	Bin    Binaries
	Dir    string // data directories and logs go under it
	Secret string
	// Masters is the number of Raft masters: master i (from 1) is mi on
	// 127.0.0.i.
	Masters     int
	MasterFlags []string
	// UIDs, if set, run master i as user UIDs[i-1] (the caller must be
	// root), so that each master's sockets can be told apart by owner.
	UIDs    []uint32
	Workers []WorkerSpec
}

// WorkerSpec is one worker to start.
type WorkerSpec struct {
	ID     string
	Cores  int
	Memory string // 2g
}

// Cluster is a running cluster of masters and workers.
type Cluster struct {
	h       Host
	opt     Options
	Masters []*Master
	Workers []*Worker
	http    *http.Client
}

// Master is one master; its process changes when it is restarted.
type Master struct {
	ID       string
	IP       string
	URL      string // API base URL
	RaftAddr string
	DataDir  string
	UID      uint32
	args     []string

	mu   sync.Mutex
	proc *Proc
}

// Proc is the master's current process.
func (m *Master) Proc() *Proc {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.proc
}

// Worker is one worker.
type Worker struct {
	*Proc
	ID      string
	URL     string
	WorkDir string
}

// StartCluster starts the masters, waits until one leads, then starts the
// workers.
func StartCluster(h Host, opt Options) (*Cluster, error) {
	c := &Cluster{h: h, opt: opt, http: &http.Client{Timeout: 2 * time.Second}}
	var peers []string
	for i := 1; i <= opt.Masters; i++ {
		ip := fmt.Sprintf("127.0.0.%d", i)
		api, err := FreePort(ip)
		if err != nil {
			return nil, err
		}
		raft, err := FreePort(ip)
		if err != nil {
			return nil, err
		}
		m := &Master{
			ID: fmt.Sprintf("m%d", i), IP: ip,
			URL:      fmt.Sprintf("http://%s:%d", ip, api),
			RaftAddr: net.JoinHostPort(ip, strconv.Itoa(raft)),
			DataDir:  filepath.Join(opt.Dir, fmt.Sprintf("m%d", i)),
		}
		if len(opt.UIDs) >= i {
			m.UID = opt.UIDs[i-1]
		}
		if err := os.MkdirAll(m.DataDir, 0o700); err != nil {
			return nil, err
		}
		if m.UID != 0 {
			if err := os.Chown(m.DataDir, int(m.UID), int(m.UID)); err != nil {
				return nil, err
			}
		}
		m.args = []string{"--node-id", m.ID, "--host", ip, "--port", strconv.Itoa(api), "--data-dir", m.DataDir}
		c.Masters = append(c.Masters, m)
		peers = append(peers, m.ID+"="+m.RaftAddr)
	}
	for _, m := range c.Masters {
		m.args = append(m.args, "--peers", strings.Join(peers, ","))
		m.args = append(m.args, opt.MasterFlags...)
		if err := c.StartMaster(m); err != nil {
			return nil, err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, _, err := c.WaitLeader(ctx); err != nil {
		return nil, err
	}
	for i, spec := range opt.Workers {
		if spec.ID == "" {
			spec.ID = fmt.Sprintf("w%d", i+1)
		}
		w, err := c.startWorker(spec)
		if err != nil {
			return nil, err
		}
		c.Workers = append(c.Workers, w)
	}
	return c, nil
}

// StartMaster (re)starts m with its data directory as it is, and waits
// until its API answers.
func (c *Cluster) StartMaster(m *Master) error {
	p, err := Start(c.h, "master-"+m.ID, c.opt.Bin.Master, filepath.Join(c.opt.Dir, "master-"+m.ID+".log"), m.args,
		ProcOptions{Env: []string{"BERTH_SECRET=" + c.opt.Secret}, UID: m.UID, GID: m.UID})
	if err != nil {
		return err
	}
	m.mu.Lock()
	m.proc = p
	m.mu.Unlock()
	return c.waitHealthy(p, m.URL)
}

func (c *Cluster) startWorker(spec WorkerSpec) (*Worker, error) {
	port, err := FreePort("127.0.0.1")
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(c.opt.Dir, "work-"+spec.ID)
	args := []string{"--master", strings.Join(c.URLs(), ","), "--id", spec.ID, "--port", strconv.Itoa(port),
		"--cores", strconv.Itoa(spec.Cores), "--memory", spec.Memory, "--work-dir", dir, "--kill-grace", "1s"}
	p, err := Start(c.h, "worker-"+spec.ID, c.opt.Bin.Worker, filepath.Join(c.opt.Dir, "worker-"+spec.ID+".log"), args,
		ProcOptions{Env: []string{"BERTH_SECRET=" + c.opt.Secret}})
	if err != nil {
		return nil, err
	}
	w := &Worker{Proc: p, ID: spec.ID, URL: fmt.Sprintf("http://127.0.0.1:%d", port), WorkDir: dir}
	return w, c.waitHealthy(p, w.URL)
}

// waitHealthy polls url/healthz until it answers, or p exits, or 15 s pass.
func (c *Cluster) waitHealthy(p *Proc, url string) error {
	return WaitHealthy(context.Background(), p, url, 15*time.Second)
}

// URLs lists the masters' API addresses.
func (c *Cluster) URLs() []string {
	out := make([]string, len(c.Masters))
	for i, m := range c.Masters {
		out[i] = m.URL
	}
	return out
}

// Status asks one master for GET /v1/cluster?completed=false (its own
// answer: a follower answers with its replica, marked so).
func (c *Cluster) Status(ctx context.Context, m *Master) (wire.ClusterStatus, error) {
	var st wire.ClusterStatus
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, m.URL+"/v1/cluster?completed=false", nil)
	if err != nil {
		return st, err
	}
	req.Header.Set("Authorization", "Bearer "+c.opt.Secret)
	resp, err := c.http.Do(req)
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return st, fmt.Errorf("GET %s/v1/cluster: %s", m.URL, resp.Status)
	}
	return st, json.NewDecoder(resp.Body).Decode(&st)
}

// Leader returns the master that answers as the ALIVE leader now, if any.
// The masters are asked at once, each within ctx, and the first leader's
// answer is returned without waiting for the others: a frozen master holds
// up nobody.
func (c *Cluster) Leader(ctx context.Context) (*Master, wire.ClusterStatus, error) {
	type answer struct {
		m   *Master
		st  wire.ClusterStatus
		err error
	}
	answers := make(chan answer, len(c.Masters))
	asked := 0
	var seen []string
	for _, m := range c.Masters {
		if p := m.Proc(); p == nil || p.Exited() {
			seen = append(seen, m.ID+": not running")
			continue
		}
		asked++
		go func() {
			st, err := c.Status(ctx, m)
			answers <- answer{m, st, err}
		}()
	}
	for range asked {
		a := <-answers
		switch {
		case a.err != nil:
			seen = append(seen, fmt.Sprintf("%s: %v", a.m.ID, a.err))
		case a.st.View == wire.ViewLeader && a.st.Status == wire.MasterAlive:
			return a.m, a.st, nil
		default:
			seen = append(seen, fmt.Sprintf("%s: %s %s", a.m.ID, a.st.View, a.st.Status))
		}
	}
	return nil, wire.ClusterStatus{}, fmt.Errorf("no ALIVE leader: %s", strings.Join(seen, "; "))
}

// WaitLeader polls until a master answers as the ALIVE leader, or ctx ends.
func (c *Cluster) WaitLeader(ctx context.Context) (*Master, wire.ClusterStatus, error) {
	var last error
	for {
		m, st, err := c.Leader(ctx)
		if err == nil {
			return m, st, nil
		}
		last = err
		select {
		case <-ctx.Done():
			return nil, st, errors.Join(ctx.Err(), last)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// ByID returns the master with the id, or nil.
func (c *Cluster) ByID(id string) *Master {
	for _, m := range c.Masters {
		if m.ID == id {
			return m
		}
	}
	return nil
}

var portMu sync.Mutex

// FreePort returns a TCP port free on ip now.
func FreePort(ip string) (int, error) {
	portMu.Lock()
	defer portMu.Unlock()
	l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
