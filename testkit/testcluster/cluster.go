package testcluster

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Options describe a cluster to start.
type Options struct {
	Bin    Binaries
	Dir    string // data directories and logs go under it
	Secret string
	// Masters is the number of Raft masters: master i (from 1) is mi on
	// 127.0.0.i.
	Masters int
	// Standalone runs the one master (Masters must be 1) without Raft: no
	// --peers, so it keeps its state as its own flags say (bolt unless
	// --recovery-mode says otherwise).
	Standalone  bool
	MasterFlags []string
	// UIDs, if set, run master i as user UIDs[i-1] (the caller must be
	// root), so that each master's sockets can be told apart by owner.
	UIDs    []uint32
	Workers []WorkerSpec
	// ListCompleted has Status and Leader ask for the completed apps and
	// drivers too: tests that check what a failover kept need them, a
	// long fault-injection run would fetch thousands at every poll.
	ListCompleted bool
}

// WorkerSpec is one worker to start.
type WorkerSpec struct {
	ID        string
	Cores     int
	Memory    string        // 2g
	KillGrace time.Duration // its --kill-grace; 0: 1 s
	Flags     []string      // more flags, after the harness's own
	// UID, if set, runs the worker as that user (the caller must be root
	// and the cluster's directory traversable by it), so that its sockets
	// can be told apart by owner (NetCut.CutWorker). It enforces no limits.
	UID uint32
	// Env is added to the worker's environment (after the harness's
	// own), which its processes inherit in part (PATH, JAVA_HOME...).
	Env []string
	// DefaultPortRange leaves out the harness's --port-range (a range of
	// its own for each worker of the machine), so that the worker takes
	// its host slot's block of the default range, as a user's would.
	DefaultPortRange bool
	// Host is the worker's --host (its address, advertised); empty:
	// 127.0.0.1, without the flag.
	Host string
}

// Cluster is a running cluster of masters and workers. Masters and Workers
// grow with Join and AddWorker, which must not run while another goroutine
// reads them.
type Cluster struct {
	h       Host
	opt     Options
	Masters []*Master
	Workers []*Worker
	http    *http.Client
	// PKI is the cluster's CA: every master and worker runs with TLS (Raft
	// only runs over it); tests trust it through PKI.Transport and
	// PKI.ClientOption and prove themselves with the secret.
	PKI *PKI
}

// StartCluster starts the masters, waits until one leads, then starts the
// workers.
func StartCluster(h Host, opt Options) (*Cluster, error) {
	c := &Cluster{h: h, opt: opt, PKI: opt.Bin.PKI}
	if c.PKI == nil {
		pki, err := NewPKI(filepath.Join(opt.Dir, "tls"))
		if err != nil {
			return nil, err
		}
		c.PKI = pki
	}
	tr, err := c.PKI.Transport()
	if err != nil {
		return nil, err
	}
	c.http = &http.Client{Timeout: 2 * time.Second, Transport: tr}
	var peers []string
	for i := 1; i <= opt.Masters; i++ {
		m, err := c.newMaster(i, !opt.Standalone)
		if err != nil {
			return nil, err
		}
		c.Masters = append(c.Masters, m)
		peers = append(peers, m.ID+"="+m.RaftAddr)
	}
	for _, m := range c.Masters {
		if !opt.Standalone {
			m.args = append(m.args, "--peers", strings.Join(peers, ","))
		}
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
	for _, spec := range opt.Workers {
		if _, err := c.AddWorker(spec); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// URLs lists the masters' API addresses.
func (c *Cluster) URLs() []string {
	out := make([]string, len(c.Masters))
	for i, m := range c.Masters {
		out[i] = m.URL
	}
	return out
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

// WorkerByID returns the worker with the id, or nil.
func (c *Cluster) WorkerByID(id string) *Worker {
	for _, w := range c.Workers {
		if w.ID == id {
			return w
		}
	}
	return nil
}

var (
	portMu   sync.Mutex
	nextPort int
)

// FreePort returns a TCP port free on ip now, for a daemon to bind soon.
// Not one of the kernel's ephemeral ports (a listen on port 0): any
// socket of any test may be given that one before the daemon binds it
// (make test saw "raft transport on 127.0.0.3:41483: bind: address
// already in use"). Ports 12000-17999 instead, below the ephemeral range
// and apart from the workers' --port-range (portRange: 20000 up), taken
// in turn from a place of this process's own, as tests of several
// packages run at once.
func FreePort(ip string) (int, error) {
	portMu.Lock()
	defer portMu.Unlock()
	const first, size = 12000, 6000
	if nextPort == 0 {
		nextPort = os.Getpid()*101%size + 1
	}
	for range size {
		port := first + nextPort%size
		nextPort++
		if l, err := net.Listen("tcp", net.JoinHostPort(ip, strconv.Itoa(port))); err == nil {
			l.Close()
			return port, nil
		}
	}
	return 0, fmt.Errorf("no free port on %s in %d-%d", ip, first, first+size-1)
}
