package sparkcmp

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/berth-cluster/berth/bench/internal/benchtool"
	"github.com/berth-cluster/berth/testkit/testcluster"
	"github.com/berth-cluster/berth/wire"
)

// berthCluster is berth as its docs set it up: three masters replicating
// through Raft (which runs only over mutual TLS, so every daemon has a
// certificate of one CA), the workers listing every master, one operator
// secret in a file.
type berthCluster struct {
	cfg        *config
	ps         *procs
	pki        *testcluster.PKI
	secretFile string
	masterDs   []*daemon
	urls       []string
	workerDs   []*daemon
	http       *http.Client
	secret     string
}

func (c *berthCluster) name() string { return "berth" }

func (c *berthCluster) masterURL() string {
	var addrs []string
	for _, u := range c.urls {
		addrs = append(addrs, strings.TrimPrefix(u, "https://"))
	}
	return "spark+berth://" + strings.Join(addrs, ",")
}

// submitArgs are what the plugin needs: its jar, the CA of the masters'
// certificates and the operator secret (NOTES.md in spark/).
func (c *berthCluster) submitArgs() []string {
	return []string{"--jars", c.cfg.pluginJar(),
		"--conf", "spark.berth.tls.caFile=" + c.pki.CAFile(),
		"--conf", "spark.berth.secretFile=" + c.secretFile}
}

func (c *berthCluster) workerHosts() []string {
	out := make([]string, len(c.workerDs))
	for i := range out {
		out[i] = loopback(berthWorkerFirstIP + i)
	}
	return out
}

func (c *berthCluster) masters() []*daemon { return c.masterDs }

func (c *berthCluster) controlPlane() []*daemon { return c.masterDs }

func (c *berthCluster) daemons() []*daemon {
	return append(append([]*daemon{}, c.masterDs...), c.workerDs...)
}

// startBerth starts the three masters, waits until one leads, then starts
// the workers and waits until every one is ALIVE.
func startBerth(ctx context.Context, cfg *config, ps *procs, dir string) (*berthCluster, error) {
	logs := filepath.Join(dir, "logs")
	if err := os.MkdirAll(logs, 0o755); err != nil {
		return nil, err
	}
	pki, err := testcluster.NewPKI(filepath.Join(dir, "tls"))
	if err != nil {
		return nil, fmt.Errorf("making the cluster's CA: %w", err)
	}
	c := &berthCluster{cfg: cfg, ps: ps, pki: pki, secretFile: filepath.Join(dir, "secret"), secret: benchtool.Secret()}
	if err := os.WriteFile(c.secretFile, []byte(c.secret+"\n"), 0o600); err != nil {
		return nil, err
	}
	tr, err := pki.Transport()
	if err != nil {
		return nil, err
	}
	c.http = &http.Client{Timeout: 2 * time.Second, Transport: tr}
	var peers []string
	for i := range berthMasters {
		ip := loopback(berthMasterFirstIP + i)
		peers = append(peers, fmt.Sprintf("m%d=%s", i+1, hostPort(ip, berthRaftPort)))
		c.urls = append(c.urls, "https://"+hostPort(ip, berthAPIPort))
	}
	for i := range berthMasters {
		id, ip := fmt.Sprintf("m%d", i+1), loopback(berthMasterFirstIP+i)
		tlsFlags, err := pki.MasterFlags(id, ip, 0)
		if err != nil {
			return nil, err
		}
		m := &daemon{name: id, path: cfg.masterBin(), env: baseEnv(), logDir: logs, args: append([]string{
			"--node-id", id, "--host", ip, "--port", strconv.Itoa(berthAPIPort),
			"--raft-addr", hostPort(ip, berthRaftPort), "--peers", strings.Join(peers, ","),
			"--data-dir", filepath.Join(dir, id), "--secret-file", c.secretFile,
			"--worker-timeout", cfg.workerTimeout.String(), "--min-core-unit", strconv.Itoa(cfg.minCoreUnit),
		}, tlsFlags...)}
		c.masterDs = append(c.masterDs, m)
	}
	for _, m := range c.masterDs {
		if err := ps.start(m); err != nil {
			return nil, err
		}
	}
	for i, m := range c.masterDs {
		if err := testcluster.WaitHealthy(ctx, m.proc, c.urls[i], 30*time.Second); err != nil {
			return nil, err
		}
	}
	if err := waitWorkers(ctx, c, 0, time.Minute); err != nil {
		return nil, err
	}
	for i := range cfg.workers {
		id, ip := fmt.Sprintf("bw%d", i+1), loopback(berthWorkerFirstIP+i)
		tlsFlags, err := pki.WorkerFlags(id, ip, 0)
		if err != nil {
			return nil, err
		}
		first := berthPortRanges + i*berthPortBlock
		c.workerDs = append(c.workerDs, &daemon{name: id, path: cfg.workerBin(), env: baseEnv(), logDir: logs, args: append([]string{
			"--master", strings.Join(c.urls, ","), "--id", id, "--host", ip, "--port", strconv.Itoa(berthWorkerPort),
			"--cores", strconv.Itoa(cfg.workerCores), "--memory", cfg.workerMemory,
			"--work-dir", filepath.Join(dir, id), "--host-dir", filepath.Join(dir, "host"),
			"--port-range", fmt.Sprintf("%d-%d", first, first+berthPortBlock-1), "--secret-file", c.secretFile,
		}, tlsFlags...)})
	}
	for _, w := range c.workerDs {
		if err := ps.start(w); err != nil {
			return nil, err
		}
	}
	return c, waitWorkers(ctx, c, cfg.workers, 2*time.Minute)
}

func (c *berthCluster) clusterStatus(ctx context.Context, i int) (wire.ClusterStatus, error) {
	var st wire.ClusterStatus
	r := wire.MasterAPI.Cluster
	url := c.urls[i] + r.Path() + "?" + wire.ClusterCompletedParam + "=false"
	req, err := http.NewRequestWithContext(ctx, r.Method, url, nil)
	if err != nil {
		return st, err
	}
	req.Header.Set("Authorization", "Bearer "+c.secret)
	resp, err := c.http.Do(req)
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return st, fmt.Errorf("%s %s: %s", r.Method, url, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		return st, fmt.Errorf("%s %s: %w", r.Method, url, err)
	}
	return st, nil
}

// status asks every running master at once (a follower answers with its
// replica, marked so).
func (c *berthCluster) status(ctx context.Context) (clusterView, error) {
	states, errs := askAll(ctx, c.masterDs, c.clusterStatus)
	v := clusterView{aliveHosts: map[string]bool{}}
	var said []string
	for i, st := range states {
		if errs[i] != nil {
			said = append(said, fmt.Sprintf("%s: %v", c.masterDs[i].name, errs[i]))
			continue
		}
		v.mastersUp++
		said = append(said, fmt.Sprintf("%s: %s %s", c.masterDs[i].name, st.View, st.Status))
		if st.View != wire.ViewLeader || st.Status != wire.MasterAlive {
			continue
		}
		v.active = c.masterDs[i]
		for _, w := range st.Workers {
			if w.State == wire.WorkerAlive {
				v.aliveHosts[w.Host] = true
				v.coresInUse += w.CoresUsed
			}
		}
	}
	v.description = fmt.Sprintf("%s; %d workers ALIVE, %d cores in use", strings.Join(said, ", "), len(v.aliveHosts), v.coresInUse)
	if v.active == nil {
		return v, fmt.Errorf("no berth master leads ALIVE (%s)", v.description)
	}
	return v, nil
}

func (c *berthCluster) loseWorker(i int, frozen bool) (time.Time, error) {
	return loseWorker(c.ps, c.workerDs[i], frozen)
}

func (c *berthCluster) restartWorker(ctx context.Context, i int) error {
	d := c.workerDs[i]
	return restartWorker(ctx, c, c.ps, d, c.workerHosts()[i], c.cfg.workers, c.cfg.workerTimeout, func(pid int) { removeWorkerCgroups(d.name, pid) })
}

func (c *berthCluster) restartMaster(ctx context.Context, d *daemon) error {
	if d.running() {
		return fmt.Errorf("berth master %s still runs", d.name)
	}
	if err := c.ps.start(d); err != nil {
		return err
	}
	for i, m := range c.masterDs {
		if m == d {
			if err := testcluster.WaitHealthy(ctx, d.proc, c.urls[i], time.Minute); err != nil {
				return err
			}
		}
	}
	return waitWorkers(ctx, c, c.cfg.workers, 2*time.Minute)
}
