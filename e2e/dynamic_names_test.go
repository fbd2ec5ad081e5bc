package e2e

// A --run-as dynamic identity has no /etc/passwd entry; its worker serves
// its name to glibc through nss-systemd (worker/userdb.go), so that
// programs which look up their user work: Spark's executors (Hadoop's
// login) died at start without one.

import (
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/berth-cluster/berth/testkit/testcluster"
	"github.com/berth-cluster/berth/testkit/testproc"
	"github.com/berth-cluster/berth/wire"
)

// Two workers of one host, each its slot's names: an executor on each
// finds its user and group, berth-UID, through glibc; a stopped worker's
// socket and a SIGKILLed one's (through its guardian) are removed.
func TestDynamicIdentitiesHaveNames(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("--run-as needs a root worker (CI runs as root)")
	}
	t.Parallel()
	cl := startCluster(t, clusterSpec{workers: []string{"w1", "w2"}, cores: 1, memory: "1g", tenantsReach: true,
		workerFlags: []string{"--run-as", "dynamic"}})
	sockets := map[string]string{}
	for _, id := range []string{"w1", "w2"} {
		sockets[id] = namesSocket(t, cl.worker(id))
	}
	if sockets["w1"] == sockets["w2"] {
		t.Fatalf("both workers serve their names on %s", sockets["w1"])
	}
	script := "echo uid:$(id -u) user:$(id -un) group:$(id -gn); getent passwd $(id -u); exec sleep 600 " + cl.marker
	app := cl.registerApp(t, wire.AppDescription{Name: "whoami", Command: []string{"/bin/sh", "-c", script},
		MaxCores: 2, CoresPerExecutor: 1, MemoryPerExecutorMB: 64})
	st := cl.statusWhen(30*time.Second, "an executor on each worker", func(st wire.ClusterStatus) error {
		a, ok := appStatus(st, app)
		if !ok || len(executorsIn(a, wire.ExecutorRunning)) != 2 {
			return fmt.Errorf("app %s: %v", app, ok)
		}
		return nil
	})
	line := regexp.MustCompile(`uid:(\d+) user:(\S*) group:(\S*)\n([^\n]*)\n`)
	uids := map[string]bool{}
	for _, e := range mustApp(t, st, app).Executors {
		var m []string
		testproc.Eventually(t, 20*time.Second, fmt.Sprintf("executor %d says who it is", e.ID), func() error {
			rc, err := cl.c.ExecutorLogs(callCtx(t, 5*time.Second), app, e.ID, wire.LogStdout, 0)
			if err != nil {
				return err
			}
			defer rc.Close()
			data, err := io.ReadAll(rc)
			if m = line.FindStringSubmatch(string(data)); err == nil && m == nil {
				err = fmt.Errorf("not yet: %q", data)
			}
			return err
		})
		name := "berth-" + m[1]
		want := name + ":x:" + m[1] + ":" + m[1] + ":berth dynamic identity:/:/usr/sbin/nologin"
		if m[2] != name || m[3] != name || m[4] != want {
			t.Errorf("executor %d on %s: user %q, group %q, passwd %q; want %s twice and %q", e.ID, e.WorkerID, m[2], m[3], m[4], name, want)
		}
		uids[m[1]] = true
	}
	if len(uids) != 2 {
		t.Errorf("the executors on two workers run as %v: want two identities, one of each worker's range", uids)
	}

	// A worker stopped removes its socket; a SIGKILLed one's guardian does.
	w2, w1 := cl.worker("w2"), cl.worker("w1")
	born := map[string]os.FileInfo{}
	for id, path := range sockets {
		fi, err := os.Lstat(path)
		if err != nil {
			t.Fatal(err)
		}
		born[id] = fi
	}
	if err := w2.Stop(20 * time.Second); err != nil {
		t.Fatal(err)
	}
	w1.Kill()
	for id, path := range sockets {
		testproc.Eventually(t, 10*time.Second, id+"'s socket "+path+" removed", func() bool {
			fi, err := os.Lstat(path)
			// Another test's worker of the same slot may have bound it anew.
			return err != nil || !os.SameFile(fi, born[id]) || !fi.ModTime().Equal(born[id].ModTime())
		})
	}
}

// namesSocket is the socket a --run-as dynamic worker says it serves its
// names on, once it is there.
func namesSocket(t *testing.T, w *testcluster.Worker) string {
	t.Helper()
	re := regexp.MustCompile(`serving the names of this worker's identities to nss-systemd"? socket=(\S+)`)
	var path string
	testproc.Eventually(t, 20*time.Second, w.ID+" serves its names", func() error {
		data, err := os.ReadFile(w.Log)
		if err != nil {
			return err
		}
		if m := re.FindSubmatch(data); m != nil {
			path = string(m[1])
			var st syscall.Stat_t
			if err := syscall.Lstat(path, &st); err != nil || st.Mode&syscall.S_IFMT != syscall.S_IFSOCK {
				return fmt.Errorf("%s: %v", path, err)
			}
			return nil
		}
		if strings.Contains(string(data), "cannot serve the names") {
			t.Fatalf("%s cannot serve its names:\n%s", w.ID, data)
		}
		return fmt.Errorf("not in %s yet", w.Log)
	})
	return path
}
