package sparkcmp

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/berth-cluster/berth/internal/poll"
)

// sparkCluster is Spark standalone as its docs set it up for high
// availability: a ZooKeeper, two Masters with ZOOKEEPER recovery (one
// active, one standby) and the Workers listing both, every daemon started
// with the flags a user gives spark-class and its settings in a
// spark-defaults.conf of SPARK_CONF_DIR.
type sparkCluster struct {
	cfg      *config
	ps       *procs
	confDir  string
	zk       *daemon
	masterDs []*daemon
	workerDs []*daemon
	http     *http.Client
	// files are the settings files written, path → content, for the report.
	files map[string]string
}

func (c *sparkCluster) name() string { return "Spark" }

func (c *sparkCluster) masterURL() string {
	var addrs []string
	for i := range c.masterDs {
		addrs = append(addrs, hostPort(loopback(sparkMasterFirstIP+i), sparkMasterPort))
	}
	return "spark://" + strings.Join(addrs, ",")
}

func (c *sparkCluster) submitArgs() []string { return nil }

func (c *sparkCluster) workerHosts() []string {
	out := make([]string, len(c.workerDs))
	for i := range out {
		out[i] = loopback(sparkWorkerFirstIP + i)
	}
	return out
}

func (c *sparkCluster) masters() []*daemon { return c.masterDs }

func (c *sparkCluster) controlPlane() []*daemon { return append([]*daemon{c.zk}, c.masterDs...) }

func (c *sparkCluster) daemons() []*daemon {
	return append(append([]*daemon{c.zk}, c.masterDs...), c.workerDs...)
}

// startSpark writes the settings, starts ZooKeeper, the Masters (the first
// becomes the active one) and the Workers, and waits until every Worker is
// ALIVE.
func startSpark(ctx context.Context, cfg *config, ps *procs, dir string) (*sparkCluster, error) {
	c := &sparkCluster{cfg: cfg, ps: ps, confDir: filepath.Join(dir, "conf"), http: &http.Client{Timeout: 2 * time.Second}, files: map[string]string{}}
	logs := filepath.Join(dir, "logs")
	for _, d := range []string{c.confDir, logs, filepath.Join(dir, "zk")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	java := javaPath()
	if err := c.writeSettings(dir); err != nil {
		return nil, err
	}
	c.zk = &daemon{name: "zk", path: java, logDir: logs, env: baseEnv(),
		args: []string{"-Dlog4j2.configurationFile=" + filepath.Join(dir, "zk-log4j2.properties"),
			"-cp", filepath.Join(cfg.sparkHome, "jars", "*"), "org.apache.zookeeper.server.ZooKeeperServerMain", filepath.Join(dir, "zoo.cfg")}}
	if err := ps.start(c.zk); err != nil {
		return nil, err
	}
	if err := waitZooKeeper(ctx, c.zk, 60*time.Second); err != nil {
		return nil, err
	}
	// SPARK_LOCAL_IP, as spark-env.sh would set it on a machine of its
	// own: without it the web UIs bind 0.0.0.0 (two on one port collide)
	// and the executors of a Worker bind the machine's address, not its.
	env := func(ip string) []string {
		return append(baseEnv(), "SPARK_HOME="+cfg.sparkHome, "SPARK_CONF_DIR="+c.confDir, "SPARK_LOCAL_IP="+ip, "SPARK_PRINT_LAUNCH_COMMAND=1")
	}
	class := filepath.Join(cfg.sparkHome, "bin", "spark-class")
	for i := range sparkMasters {
		ip := loopback(sparkMasterFirstIP + i)
		c.masterDs = append(c.masterDs, &daemon{name: fmt.Sprintf("s%d", i+1), path: class, env: env(ip), logDir: logs,
			args: []string{"org.apache.spark.deploy.master.Master", "--host", ip, "--port", strconv.Itoa(sparkMasterPort), "--webui-port", strconv.Itoa(sparkMasterUIPort)}})
	}
	// The first Master alone, until it leads: the active one is then s1 in
	// every run, and the standby comes up as the standby, while the Workers
	// start.
	if err := ps.start(c.masterDs[0]); err != nil {
		return nil, err
	}
	if err := c.waitMasterState(ctx, 0, "ALIVE", 90*time.Second); err != nil {
		return nil, err
	}
	for _, m := range c.masterDs[1:] {
		if err := ps.start(m); err != nil {
			return nil, err
		}
	}
	for i := range cfg.workers {
		ip := loopback(sparkWorkerFirstIP + i)
		work := filepath.Join(dir, fmt.Sprintf("sw%d", i+1))
		c.workerDs = append(c.workerDs, &daemon{name: fmt.Sprintf("sw%d", i+1), path: class, env: env(ip), logDir: logs,
			args: []string{"org.apache.spark.deploy.worker.Worker", "--host", ip, "--port", strconv.Itoa(sparkWorkerPort),
				"--webui-port", strconv.Itoa(sparkWorkerUIPort), "--cores", strconv.Itoa(cfg.workerCores),
				"--memory", cfg.workerMemory, "--work-dir", work, c.masterURL()}})
	}
	for _, w := range c.workerDs {
		if err := ps.start(w); err != nil {
			return nil, err
		}
	}
	for i := range c.masterDs[1:] {
		if err := c.waitMasterState(ctx, i+1, "STANDBY", 90*time.Second); err != nil {
			return nil, err
		}
	}
	return c, waitWorkers(ctx, c, cfg.workers, 3*time.Minute)
}

// writeSettings writes ZooKeeper's zoo.cfg (its sample's tickTime unless
// --zk-tick-time, no admin server, bound to its own address) and the
// daemons' spark-defaults.conf.
func (c *sparkCluster) writeSettings(dir string) error {
	files := map[string]string{
		filepath.Join(dir, "zoo.cfg"): fmt.Sprintf(`# ZooKeeper for Spark's Masters (standalone mode): zoo_sample.cfg's tickTime
# unless --zk-tick-time; a session lasts at most 20 ticks (maxSessionTimeout).
tickTime=%d
dataDir=%s
clientPortAddress=%s
clientPort=%d
admin.enableServer=false
4lw.commands.whitelist=srvr
`, c.cfg.zkTickTime.Milliseconds(), filepath.Join(dir, "zk"), zkIP, zkPort),
		filepath.Join(dir, "zk-log4j2.properties"): `rootLogger.level = info
rootLogger.appenderRef.stdout.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{ISO8601} %-5p [%t] %c{1}: %m%n
`,
		filepath.Join(c.confDir, "spark-defaults.conf"): fmt.Sprintf(`# Spark standalone's daemons (Masters and Workers), read from SPARK_CONF_DIR.
spark.deploy.recoveryMode       ZOOKEEPER
spark.deploy.zookeeper.url      %s
spark.deploy.zookeeper.dir      /berthbench-spark
spark.worker.timeout            %d
# The REST submission server is on by default (6066): kept on, in our ports.
spark.master.rest.port          %d
`, hostPort(zkIP, zkPort), int(c.cfg.workerTimeout.Seconds()), sparkRESTPort),
	}
	for path, content := range files {
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			return err
		}
		c.files[path] = content
	}
	return nil
}

// waitZooKeeper asks ZooKeeper's srvr until it answers as a standalone
// server.
func waitZooKeeper(ctx context.Context, zk *daemon, within time.Duration) error {
	var last string
	if !poll.Within(ctx, within, 100*time.Millisecond, func() bool {
		if zk.proc.Exited() {
			return true
		}
		last = zkCommand(hostPort(zkIP, zkPort), "srvr")
		return strings.Contains(last, "Mode: standalone")
	}) || zk.proc.Exited() {
		return fmt.Errorf("ZooKeeper not serving at %s within %s (said %q); its log ends:\n%s", hostPort(zkIP, zkPort), within, last, zk.proc.LogTail(2000))
	}
	return nil
}

// zkCommand sends one of ZooKeeper's four-letter words and returns its
// answer ("" on any error).
func zkCommand(addr, word string) string {
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return ""
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := conn.Write([]byte(word)); err != nil {
		return ""
	}
	var b strings.Builder
	buf := make([]byte, 4096)
	for b.Len() < 64<<10 {
		n, err := conn.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return b.String()
}

// sparkMasterJSON is the part of a Master's /json/ this tool reads.
type sparkMasterJSON struct {
	Status  string `json:"status"` // ALIVE, STANDBY, RECOVERING, COMPLETING_RECOVERY
	Workers []struct {
		Host      string `json:"host"`
		State     string `json:"state"` // ALIVE, DEAD, DECOMMISSIONED, UNKNOWN
		CoresUsed int    `json:"coresused"`
	} `json:"workers"`
}

// masterState asks Master i for its status and, when it leads, its
// workers: one field each (/json/status, /json/workers), so that no poll
// has it render its retained apps.
func (c *sparkCluster) masterState(ctx context.Context, i int) (sparkMasterJSON, error) {
	var st sparkMasterJSON
	if err := c.getJSON(ctx, i, "status", &st); err != nil || st.Status != "ALIVE" {
		return st, err
	}
	return st, c.getJSON(ctx, i, "workers", &st)
}

func (c *sparkCluster) getJSON(ctx context.Context, i int, field string, into any) error {
	url := fmt.Sprintf("http://%s/json/%s", hostPort(loopback(sparkMasterFirstIP+i), sparkMasterUIPort), field)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(into); err != nil {
		return fmt.Errorf("GET %s: %w", url, err)
	}
	return nil
}

func (c *sparkCluster) waitMasterState(ctx context.Context, i int, want string, within time.Duration) error {
	var last string
	m := c.masterDs[i]
	if !poll.Within(ctx, within, 100*time.Millisecond, func() bool {
		if m.proc.Exited() {
			return true
		}
		st, err := c.masterState(ctx, i)
		last = st.Status
		if err != nil {
			last = err.Error()
		}
		return err == nil && st.Status == want
	}) || m.proc.Exited() {
		return fmt.Errorf("Spark Master %s not %s within %s (%s); its log ends:\n%s", m.name, want, within, last, m.proc.LogTail(3000))
	}
	return nil
}

// status asks both Masters at once.
func (c *sparkCluster) status(ctx context.Context) (clusterView, error) {
	states, errs := askAll(ctx, c.masterDs, c.masterState)
	v := clusterView{aliveHosts: map[string]bool{}}
	var said []string
	for i, st := range states {
		if errs[i] != nil {
			said = append(said, fmt.Sprintf("%s: %v", c.masterDs[i].name, errs[i]))
			continue
		}
		v.mastersUp++
		said = append(said, fmt.Sprintf("%s: %s", c.masterDs[i].name, st.Status))
		if st.Status != "ALIVE" {
			continue
		}
		v.active = c.masterDs[i]
		for _, w := range st.Workers {
			if w.State == "ALIVE" {
				v.aliveHosts[w.Host] = true
				v.coresInUse += w.CoresUsed
			}
		}
	}
	v.description = fmt.Sprintf("%s; %d workers ALIVE, %d cores in use", strings.Join(said, ", "), len(v.aliveHosts), v.coresInUse)
	if v.active == nil {
		return v, fmt.Errorf("no Spark Master ALIVE (%s)", v.description)
	}
	return v, nil
}

func (c *sparkCluster) loseWorker(i int, frozen bool) (time.Time, error) {
	return loseWorker(c.ps, c.workerDs[i], frozen)
}

func (c *sparkCluster) restartWorker(ctx context.Context, i int) error {
	return restartWorker(ctx, c, c.ps, c.workerDs[i], c.workerHosts()[i], c.cfg.workers, c.cfg.workerTimeout, nil)
}

func (c *sparkCluster) restartMaster(ctx context.Context, d *daemon) error {
	if d.running() {
		return fmt.Errorf("Spark Master %s still runs", d.name)
	}
	if err := c.ps.start(d); err != nil {
		return err
	}
	for i, m := range c.masterDs {
		if m == d {
			if err := c.waitMasterState(ctx, i, "STANDBY", 2*time.Minute); err != nil {
				return err
			}
		}
	}
	return waitWorkers(ctx, c, c.cfg.workers, 2*time.Minute)
}
