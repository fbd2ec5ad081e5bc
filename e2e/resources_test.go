package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/berth-cluster/berth/wire"
)

// GPUs through the real binaries: two workers find two fake GPUs each with
// a discovery script; an app asking one GPU per executor gets four
// executors on four distinct (worker, GPU) pairs, each seeing its own in
// CUDA_VISIBLE_DEVICES, BERTH_RESOURCE_GPU and the {{RESOURCES}} file. The
// addresses stay taken across a kill -9 of the leader (a second GPU app
// waits and says why), and are free again once the first app's executors
// end: the second app then gets them.
func TestGPUsAssignedKeptThroughFailoverAndFreed(t *testing.T) {
	t.Parallel()
	script := filepath.Join(t.TempDir(), "gpus.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho '{\"name\":\"gpu\",\"addresses\":[\"0\",\"1\"]}'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cl := startCluster(t, clusterSpec{masters: 3, workers: []string{"w1", "w2"}, cores: 4, memory: "1g",
		flags: []string{"--worker-timeout", "10s", "--recovery-timeout", "30s"}, workerFlags: []string{"--resource", "gpu:discovery=" + script}})
	for _, w := range cl.mustStatus().Workers {
		if len(w.Resources) != 1 || w.Resources[0].Name != "gpu" || !slices.Equal(w.Resources[0].Addresses, []string{"0", "1"}) || w.Resources[0].Free != 2 {
			t.Fatalf("worker %s offers %+v, want gpu 0,1 both free", w.ID, w.Resources)
		}
	}

	gpuApp := func(name string) wire.AppDescription {
		d := cl.longApp(name, 8) // more cores than the GPUs allow: GPUs bound it
		d.Command = []string{"/bin/sh", "-c", `echo "cuda=$CUDA_VISIBLE_DEVICES berth=$BERTH_RESOURCE_GPU"; cat ` + wire.PlaceholderResources +
			"; sleep 3600; : " + cl.marker + " " + wire.PlaceholderAppID + "/" + wire.PlaceholderExecutorID}
		d.ResourcesPerExecutor = wire.ResourceAmounts{"gpu": 1}
		return d
	}
	first, err := cl.c.RegisterApp(callCtx(t, 30*time.Second), gpuApp("gpus-1"))
	if err != nil {
		t.Fatal(err)
	}
	followEvents(t, cl.c, first)
	before := cl.runningApp(first, 4, 30*time.Second)
	grants := map[string]bool{} // worker/gpu
	for _, e := range liveExecutors(mustApp(t, before, first)) {
		g := e.Resources["gpu"]
		if len(g.Addresses) != 1 {
			t.Fatalf("executor %d has gpu grant %+v, want one address", e.ID, g)
		}
		key := e.WorkerID + "/" + g.Addresses[0]
		if grants[key] {
			t.Errorf("two executors on %s", key)
		}
		grants[key] = true
		out := cl.executorStdout(first, e.ID, "berth=")
		want := fmt.Sprintf("cuda=%s berth=%s", g.Addresses[0], g.Addresses[0])
		if !strings.Contains(out, want) {
			t.Errorf("executor %d (gpu %s) printed %q, want %q", e.ID, g.Addresses[0], out, want)
		}
		var file []struct {
			ID        struct{ ComponentName, ResourceName string } `json:"id"`
			Addresses []string                                     `json:"addresses"`
		}
		_, rest, _ := strings.Cut(out, "\n")
		if err := json.Unmarshal([]byte(strings.TrimSpace(rest)), &file); err != nil || len(file) != 1 ||
			file[0].ID.ResourceName != "gpu" || !slices.Equal(file[0].Addresses, g.Addresses) {
			t.Errorf("executor %d's resources file: %q (%v)", e.ID, rest, err)
		}
	}
	if len(grants) != 4 {
		t.Fatalf("GPU grants %v, want the four (worker, gpu) pairs", grants)
	}

	old := cl.master(before.MasterID)
	old.Proc().Kill()
	_, st := cl.leader(40*time.Second, old)
	for _, e := range liveExecutors(mustApp(t, st, first)) {
		if g := e.Resources["gpu"]; len(g.Addresses) != 1 || !grants[e.WorkerID+"/"+g.Addresses[0]] {
			t.Errorf("after the failover executor %d holds gpu %+v on %s, not a grant it had", e.ID, g, e.WorkerID)
		}
	}
	for _, w := range st.Workers {
		if len(w.Resources) != 1 || w.Resources[0].Free != 0 {
			t.Errorf("after the failover worker %s shows %+v, want both GPUs in use", w.ID, w.Resources)
		}
	}

	second, err := cl.c.RegisterApp(callCtx(t, 30*time.Second), gpuApp("gpus-2"))
	if err != nil {
		t.Fatal(err)
	}
	followEvents(t, cl.c, second)
	cl.appWhen(second, 20*time.Second, "the second GPU app waiting for a GPU", func(a wire.AppStatus) error {
		if len(a.Executors) != 0 || !strings.Contains(a.Waiting, "no worker has gpu=1 free") {
			return fmt.Errorf("executors %s, waiting %q", describeExecs(a), a.Waiting)
		}
		return nil
	})
	if _, err := cl.c.KillApp(callCtx(t, 30*time.Second), first); err != nil {
		t.Fatal(err)
	}
	cl.runningApp(second, 4, 30*time.Second)
	st = cl.statusWhen(20*time.Second, "the first app's processes gone", func(wire.ClusterStatus) error {
		for k := range cl.execPids() {
			if strings.HasPrefix(k, first+"/") {
				return fmt.Errorf("%s still runs", k)
			}
		}
		return nil
	})
	seen := map[string]bool{}
	for _, e := range liveExecutors(mustApp(t, st, second)) {
		key := e.WorkerID + "/" + e.Resources["gpu"].Addresses[0]
		if seen[key] {
			t.Errorf("the second app has two executors on %s", key)
		}
		seen[key] = true
	}
}

// executorStdout reads an executor's stdout through the master once it
// holds want.
func (cl *cluster) executorStdout(appID string, execID int, want string) string {
	cl.t.Helper()
	var out string
	cl.statusWhen(15*time.Second, fmt.Sprintf("executor %s/%d's stdout", appID, execID), func(wire.ClusterStatus) error {
		b, err := cl.c.ExecutorLogLines(callCtx(cl.t, 10*time.Second), appID, execID, "stdout", 20)
		out = string(b)
		if err != nil || !strings.Contains(out, want) || !strings.Contains(out, "]") {
			return fmt.Errorf("stdout %q, %v", out, err)
		}
		return nil
	})
	return out
}

// A share of a GPU through the real binaries: two executors asking half a
// GPU each share the worker's one GPU, and each process sees the address
// and its share (CUDA_VISIBLE_DEVICES, BERTH_RESOURCE_GPU_SHARE).
func TestGPUShareSeenByItsProcesses(t *testing.T) {
	t.Parallel()
	cl := startCluster(t, clusterSpec{workers: []string{"w1"}, cores: 4, memory: "1g", workerFlags: []string{"--resource", "gpu=1"}})
	d := cl.longApp("gpu-share", 2)
	d.Command = []string{"/bin/sh", "-c", `echo "cuda=$CUDA_VISIBLE_DEVICES share=$BERTH_RESOURCE_GPU_SHARE"; sleep 3600; : ` +
		cl.marker + " " + wire.PlaceholderAppID + "/" + wire.PlaceholderExecutorID}
	d.ResourcesPerExecutor = wire.ResourceAmounts{"gpu": 0.5}
	id, err := cl.c.RegisterApp(callCtx(t, 30*time.Second), d)
	if err != nil {
		t.Fatal(err)
	}
	followEvents(t, cl.c, id)
	st := cl.runningApp(id, 2, 30*time.Second)
	for _, e := range liveExecutors(mustApp(t, st, id)) {
		if g := e.Resources["gpu"]; g.Share != 0.5 || !slices.Equal(g.Addresses, []string{"0"}) {
			t.Errorf("executor %d holds %+v, want half of gpu 0", e.ID, g)
		}
		cl.statusWhen(15*time.Second, fmt.Sprintf("executor %d printing cuda=0 share=0.5", e.ID), func(wire.ClusterStatus) error {
			b, err := cl.c.ExecutorLogLines(callCtx(t, 10*time.Second), id, e.ID, "stdout", 5)
			if err != nil || !strings.Contains(string(b), "cuda=0 share=0.5\n") {
				return fmt.Errorf("stdout %q, %v", b, err)
			}
			return nil
		})
	}
}
