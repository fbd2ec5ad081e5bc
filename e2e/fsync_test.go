package e2e

// A write is on disk before it is acknowledged (issue 21): what makes a
// power loss of every master at once lose nothing acknowledged. Shown
// from outside, with strace on the leader and a follower while a client
// registers an app: each syncs its Raft log after the request arrived and
// before the answer leaves.

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/berth-cluster/berth/testkit/testproc"
	"github.com/berth-cluster/berth/wire"
)

// traced is an strace of one process's syscalls of interest, written to
// a file until stop.
type traced struct {
	cmd    *exec.Cmd
	out    string
	stderr lockedBuffer
}

// lockedBuffer is strace's stderr, written by exec's copying goroutine
// while the test reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func straceOf(t *testing.T, pid int, out string) *traced {
	t.Helper()
	tr := &traced{out: out}
	// -f: every thread (the Go runtime's); -ttt: microseconds since the
	// epoch, comparable across processes; -yy: the file or socket behind
	// each descriptor.
	tr.cmd = exec.Command("strace", "-f", "-ttt", "-yy", "-e", "trace=fdatasync,fsync,read,write", "-o", out, "-p", strconv.Itoa(pid))
	tr.cmd.Stderr = &tr.stderr
	if err := tr.cmd.Start(); err != nil {
		t.Fatalf("strace: %v", err)
	}
	t.Cleanup(func() { tr.stop() })
	testproc.Eventually(t, 10*time.Second, "strace attached to "+strconv.Itoa(pid), func() bool {
		return strings.Contains(tr.stderr.String(), "attached")
	})
	return tr
}

func (tr *traced) stop() {
	if tr.cmd.ProcessState == nil {
		tr.cmd.Process.Signal(syscall.SIGINT) // strace detaches and exits
		tr.cmd.Wait()
	}
}

// syscallLine is one line of strace -f -ttt output, an unfinished call's
// completion joined to its start: the time it returned.
var syscallLine = regexp.MustCompile(`^\d+ +(\d+\.\d+) (?:<\.\.\. (\w+) resumed>|(\w+)\()(.*)$`)

type syscallAt struct {
	at   float64 // when it returned (or started, if it never did)
	name string
	args string // the start's arguments, the file or socket included
}

// calls reads the trace: each call once, at the time it returned.
func (tr *traced) calls(t *testing.T) []syscallAt {
	t.Helper()
	f, err := os.Open(tr.out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []syscallAt
	pending := map[string]syscallAt{} // "pid name" → the start (its time and arguments)
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		m := syscallLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		pid, _, _ := strings.Cut(line, " ")
		at, _ := strconv.ParseFloat(m[1], 64)
		if m[2] != "" { // "<... fdatasync resumed>) = 0"
			key := pid + " " + m[2]
			out = append(out, syscallAt{at: at, name: m[2], args: pending[key].args})
			delete(pending, key)
			continue
		}
		if strings.HasSuffix(m[4], "<unfinished ...>") {
			pending[pid+" "+m[3]] = syscallAt{at: at, name: m[3], args: m[4]}
			continue
		}
		out = append(out, syscallAt{at: at, name: m[3], args: m[4]})
	}
	// A call strace saw start but not return before it detached (the
	// answer's write, on a loaded machine: the client had it, strace had
	// yet to print its end) counts at its start.
	for _, c := range pending {
		out = append(out, c)
	}
	slices.SortStableFunc(out, func(a, b syscallAt) int { return cmp.Compare(a.at, b.at) })
	return out
}

// TestAWriteIsSyncedBeforeItIsAcknowledged registers an app on a three
// master cluster while strace watches the leader and a follower: the
// leader's answer leaves after both fdatasync'd their raft.db, and after
// the request arrived.
func TestAWriteIsSyncedBeforeItIsAcknowledged(t *testing.T) {
	needRoot(t, "tracing the masters")
	if _, err := exec.LookPath("strace"); err != nil {
		t.Fatal("strace is missing: make test-deps installs it")
	}
	t.Parallel()
	hc := startCluster(t, clusterSpec{masters: 3, cores: 1, memory: "1g"})
	leader, _ := hc.leader(10 * time.Second)
	followers := hc.others(leader)

	// One HTTP/1.1 connection of our own to the leader, opened before the
	// trace: what the leader writes to it once traced is the answer.
	tr, err := bin.PKI.Transport()
	if err != nil {
		t.Fatal(err)
	}
	var local string
	tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{} // HTTP/1.1: no frames besides the answer
	dial := tr.DialContext
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err == nil {
			local = c.LocalAddr().String()
		}
		return c, err
	}
	tr.MaxConnsPerHost = 1
	hcl := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	do := func(method, path string, body []byte) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(method, leader.URL+path, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+secret)
		req.Header.Set("Content-Type", "application/json")
		resp, err := hcl.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body) // read to the end: the connection is kept for the next
		resp.Body.Close()
		return resp
	}
	do(http.MethodGet, "/v1/cluster", nil) // the connection, its handshake done

	dir := t.TempDir()
	lt := straceOf(t, leader.Proc().Pid(), filepath.Join(dir, "leader.trace"))
	var fts []*traced
	for _, f := range followers {
		fts = append(fts, straceOf(t, f.Proc().Pid(), filepath.Join(dir, f.ID+".trace")))
	}
	resp := do(http.MethodPost, "/v1/apps", jsonOf(t, wire.AppDescription{Name: "synced", Command: []string{"true"}}))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST /v1/apps: %d", resp.StatusCode)
	}
	lt.stop()
	for _, ft := range fts {
		ft.stop()
	}

	port := local[strings.LastIndex(local, ":")+1:]
	ours := func(c syscallAt) bool { return strings.Contains(c.args, ":"+port+"]") }
	var asked, answered float64
	for _, c := range lt.calls(t) {
		if c.name == "read" && ours(c) && asked == 0 {
			asked = c.at
		}
		if c.name == "write" && ours(c) && asked != 0 && answered == 0 {
			answered = c.at
		}
	}
	if asked == 0 || answered == 0 {
		t.Fatalf("the leader's trace has no read and write on our connection (local %s): read %f write %f", local, asked, answered)
	}
	// synced is the first sync of dataDir's Raft log between the request
	// and the answer, if any.
	synced := func(tr *traced, dataDir string) (syscallAt, bool) {
		log := filepath.Join(dataDir, "raft", "raft.db")
		for _, c := range tr.calls(t) {
			if (c.name == "fdatasync" || c.name == "fsync") && strings.Contains(c.args, log) && c.at > asked && c.at < answered {
				return c, true
			}
		}
		return syscallAt{}, false
	}
	if c, ok := synced(lt, leader.DataDir); ok {
		t.Logf("the leader %s synced its log %.1f ms after the request, %.1f ms before the answer", leader.ID, 1000*(c.at-asked), 1000*(answered-c.at))
	} else {
		t.Errorf("the leader %s did not sync its log between the request (%.6f) and the answer (%.6f)", leader.ID, asked, answered)
	}
	// A quorum of three is the leader and one follower: one of the two
	// synced before the answer.
	quorum := false
	for i, f := range followers {
		if c, ok := synced(fts[i], f.DataDir); ok {
			t.Logf("the follower %s synced its log %.1f ms after the request, %.1f ms before the answer", f.ID, 1000*(c.at-asked), 1000*(answered-c.at))
			quorum = true
		}
	}
	if !quorum {
		t.Errorf("neither follower synced its log between the request (%.6f) and the answer (%.6f)", asked, answered)
	}
}
