package testcluster

import (
	"cmp"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/berth-cluster/berth/wire"
)

// Master is one master; its process changes when it is restarted.
type Master struct {
	ID       string
	IP       string
	URL      string // API base URL
	RaftAddr string // "" for a standalone master
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
	UID     uint32 // 0: root
}

// newMaster describes master i (mi on 127.0.0.i, with free ports) and makes
// its data directory; the caller adds the flags that tie it to the others.
func (c *Cluster) newMaster(i int, raft bool) (*Master, error) {
	ip := fmt.Sprintf("127.0.0.%d", i)
	api, err := FreePort(ip)
	if err != nil {
		return nil, err
	}
	m := &Master{
		ID: fmt.Sprintf("m%d", i), IP: ip,
		URL:     fmt.Sprintf("https://%s:%d", ip, api),
		DataDir: filepath.Join(c.opt.Dir, fmt.Sprintf("m%d", i)),
	}
	if raft {
		port, err := FreePort(ip)
		if err != nil {
			return nil, err
		}
		m.RaftAddr = net.JoinHostPort(ip, strconv.Itoa(port))
	}
	if len(c.opt.UIDs) >= i {
		m.UID = c.opt.UIDs[i-1]
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
	tlsFlags, err := c.PKI.MasterFlags(m.ID, ip, m.UID)
	if err != nil {
		return nil, err
	}
	m.args = append(m.args, tlsFlags...)
	secretFile, err := c.secretFile(m.UID)
	if err != nil {
		return nil, err
	}
	if secretFile != "" {
		m.args = append(m.args, "--secret-file", secretFile)
	}
	return m, nil
}

// noSecretEnv blanks a BERTH_SECRET this process may have, which masters
// and workers would otherwise inherit: they take the secret from their
// secret file only (an empty BERTH_SECRET is no secret).
const noSecretEnv = wire.EnvSecret + "="

// StartMaster (re)starts m with its data directory as it is, and waits
// until its API answers.
func (c *Cluster) StartMaster(m *Master) error {
	p, err := Start(c.h, "master-"+m.ID, c.opt.Bin.Master, filepath.Join(c.opt.Dir, "master-"+m.ID+".log"), m.args,
		ProcOptions{Env: []string{noSecretEnv}, UID: m.UID, GID: m.UID})
	if err != nil {
		return err
	}
	m.mu.Lock()
	m.proc = p
	m.mu.Unlock()
	return c.waitHealthy(p, m.URL)
}

// Join starts one more master, mi on 127.0.0.i, that joins the running
// cluster through every master's API (--join) instead of bootstrapping
// with it, and adds it to Masters once its API answers. It runs with the
// cluster's MasterFlags (and as UIDs[i-1], if UIDs lists it).
func (c *Cluster) Join(i int) (*Master, error) {
	m, err := c.newMaster(i, true)
	if err != nil {
		return nil, err
	}
	m.args = append(m.args, "--raft-addr", m.RaftAddr, "--join", strings.Join(c.URLs(), ","))
	m.args = append(m.args, c.opt.MasterFlags...)
	if err := c.StartMaster(m); err != nil {
		return nil, err
	}
	c.Masters = append(c.Masters, m)
	return m, nil
}

// AddWorker starts a worker for every master, adds it to Workers and waits
// until its API answers (not until a master lists it). An empty spec.ID is
// w<n>, n its place in Workers.
func (c *Cluster) AddWorker(spec WorkerSpec) (*Worker, error) {
	if spec.ID == "" {
		spec.ID = fmt.Sprintf("w%d", len(c.Workers)+1)
	}
	if spec.KillGrace == 0 {
		spec.KillGrace = time.Second
	}
	host := cmp.Or(spec.Host, "127.0.0.1")
	port, err := FreePort(host)
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(c.opt.Dir, "work-"+spec.ID)
	// The workers of a cluster share a host directory (they are one
	// host's), one of each user's: a test's, but for those of --run-as
	// dynamic, which share the machine's (sharedHostDir).
	hostDir := filepath.Join(c.opt.Dir, fmt.Sprintf("host-%d", spec.UID))
	if runsAsDynamic(spec.Flags) {
		hostDir = sharedHostDir(spec.UID)
		if err := freeStaleSlots(hostDir); err != nil {
			return nil, err
		}
	}
	args := []string{"--master", strings.Join(c.URLs(), ","), "--id", spec.ID, "--port", strconv.Itoa(port),
		"--cores", strconv.Itoa(spec.Cores), "--memory", spec.Memory, "--work-dir", dir, "--kill-grace", spec.KillGrace.String(),
		"--host-dir", hostDir}
	if spec.Host != "" {
		args = append(args, "--host", spec.Host)
	}
	if !spec.DefaultPortRange {
		ports, err := portRange(c.h)
		if err != nil {
			return nil, err
		}
		args = append(args, "--port-range", ports)
	}
	tlsFlags, err := c.PKI.WorkerFlags(spec.ID, host, spec.UID)
	if err != nil {
		return nil, err
	}
	args = append(args, tlsFlags...)
	if spec.UID != 0 {
		for _, d := range []string{dir, hostDir} {
			if err := os.MkdirAll(d, 0o700); err != nil {
				return nil, err
			}
			if err := os.Chown(d, int(spec.UID), int(spec.UID)); err != nil {
				return nil, err
			}
		}
	}
	// Through the environment variable, where masters get the flag: both
	// ways of naming the file are used by every cluster.
	env := []string{noSecretEnv}
	secretFile, err := c.secretFile(spec.UID)
	if err != nil {
		return nil, err
	}
	if secretFile != "" {
		env = append(env, wire.EnvSecretFile+"="+secretFile)
	}
	p, err := Start(c.h, "worker-"+spec.ID, c.opt.Bin.Worker, filepath.Join(c.opt.Dir, "worker-"+spec.ID+".log"), append(args, spec.Flags...),
		ProcOptions{Env: append(env, spec.Env...), UID: spec.UID, GID: spec.UID})
	if err != nil {
		return nil, err
	}
	w := &Worker{Proc: p, ID: spec.ID, URL: fmt.Sprintf("https://%s:%d", host, port), WorkDir: dir, UID: spec.UID}
	c.Workers = append(c.Workers, w)
	return w, c.waitHealthy(p, w.URL)
}

// waitHealthy polls url/healthz until it answers, or p exits, or 15 s pass.
func (c *Cluster) waitHealthy(p *Proc, url string) error {
	return WaitHealthy(context.Background(), p, url, 15*time.Second)
}
