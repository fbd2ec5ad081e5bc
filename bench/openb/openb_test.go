package openb

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/berth-cluster/berth/placement"
)

func fixture(t *testing.T) ([]Node, []Task) {
	t.Helper()
	nodes, err := LoadNodes("testdata/nodes.csv")
	if err != nil {
		t.Fatal(err)
	}
	tasks, err := LoadTasks("testdata/pods.csv")
	if err != nil {
		t.Fatal(err)
	}
	return nodes, tasks
}

func TestLoad(t *testing.T) {
	nodes, tasks := fixture(t)
	if len(nodes) != 3 || nodes[1] != (Node{Name: "n1", MilliCPU: 96000, MemMiB: 393216, GPUs: 8, Model: "G2"}) {
		t.Errorf("nodes %+v", nodes)
	}
	if len(tasks) != 8 || tasks[4] != (Task{Name: "p4", MilliCPU: 16000, MemMiB: 32768, GPUs: 2, GPUMilli: 1000}) || tasks[4].TotalGPUMilli() != 2000 {
		t.Errorf("tasks %+v", tasks)
	}
	// gpu_spec: any of the models named, as a constraint on the node's
	// gpu-model label; a task without GPUs is not constrained (the
	// simulator checks the model in its GPU filter only).
	for i, want := range []string{`[{"label":"gpu-model","in":["T4"]}]`, `[{"label":"gpu-model","in":["G2","T4"]}]`, `null`, `null`, `null`} {
		if got, _ := json.Marshal(tasks[i].Constraints()); string(got) != want {
			t.Errorf("task %s (gpu_spec %q): constraints %s, want %s", tasks[i].Name, tasks[i].Spec, got, want)
		}
	}
	if got := nodes[0].Labels(); !reflect.DeepEqual(got, map[string]string{"gpu-model": "T4"}) {
		t.Errorf("node %s: labels %v", nodes[0].Name, got)
	}
	dir := t.TempDir()
	for name, body := range map[string]string{
		"missing-column.csv": "name,cpu_milli\np,1\n",
		"not-a-number.csv":   "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,lots,1,1,1000\n",
		"negative.csv":       "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,1,1,-1,1000\n",
		"share-of-two.csv":   "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,1,1,2,500\n",
		"over-1000.csv":      "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,1,1,1,1500\n",
		"bad-model.csv":      "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\np,1,1,1,1000,T4|a b\n",
	} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadTasks(path); err == nil || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: %v, want an error naming the file", name, err)
		}
	}
	if _, err := LoadNodes(filepath.Join(dir, "nope.csv")); err == nil {
		t.Error("a missing node list loaded")
	}
}

// The paper's tuning: the same seed gives the same sequence, another seed
// another one; the demand is brought to the ratio from above (random tasks
// leave) or from below (random tasks of the list are appended, named
// -tuned-N, until the next would pass it).
func TestArrivalsTuneDeterministically(t *testing.T) {
	_, tasks := fixture(t)
	total := 0
	for _, t := range tasks {
		total += t.TotalGPUMilli()
	}
	for _, tc := range []struct {
		name           string
		capacity       int
		ratio          float64
		grows, shrinks bool
	}{
		{"up to 130%", total, 1.3, true, false},
		{"down to 50%", total, 0.5, false, true},
		{"as it is", total, 0, false, false},
	} {
		a, b := Arrivals(tasks, tc.capacity, tc.ratio, 42), Arrivals(tasks, tc.capacity, tc.ratio, 42)
		if !reflect.DeepEqual(a, b) {
			t.Errorf("%s: two runs of seed 42 differ", tc.name)
		}
		demand := 0
		for _, x := range a {
			demand += x.TotalGPUMilli()
		}
		target := tc.ratio * float64(tc.capacity)
		switch {
		case tc.grows && (len(a) <= len(tasks) || !strings.Contains(a[len(a)-1].Name, "-tuned-") || float64(demand) > target+1000):
			t.Errorf("%s: %d tasks, demand %d for target %.0f, last %s", tc.name, len(a), demand, target, a[len(a)-1].Name)
		case tc.shrinks && (len(a) >= len(tasks) || float64(demand) > target):
			t.Errorf("%s: %d tasks, demand %d for target %.0f", tc.name, len(a), demand, target)
		case !tc.grows && !tc.shrinks && len(a) != len(tasks):
			t.Errorf("%s: %d tasks", tc.name, len(a))
		}
	}
	if reflect.DeepEqual(Arrivals(tasks, total, 1.3, 42), Arrivals(tasks, total, 1.3, 43)) {
		t.Error("seeds 42 and 43 give the same sequence")
	}
}

// A replay of the fixture with every registered policy: the curve starts
// at 0, never decreases, never exceeds the demand that arrived nor the
// cluster, and the figures add up; replays of one seed are identical. (The
// replay itself checks that no launch over-commits a node or lands on one
// that a task's gpu_spec excludes.)
func TestReplay(t *testing.T) {
	nodes, tasks := fixture(t)
	capacity := 11 * placement.Whole
	arrivals := Arrivals(tasks, capacity, 1.3, 42)
	for _, name := range placement.Names() {
		run := func() *Run {
			p, err := NewPolicy(name, 42, tasks, nodes)
			if err != nil {
				t.Fatal(err)
			}
			r, err := Replay(nodes, arrivals, p, 42)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			return r
		}
		r := run()
		if r.Placed+r.Failed != len(arrivals) || r.Placed == 0 || r.Curve[0] != 0 {
			t.Errorf("%s: placed %d failed %d of %d, curve %v", name, r.Placed, r.Failed, len(arrivals), r.Curve)
		}
		for pct := 1; pct < len(r.Curve); pct++ {
			if r.Curve[pct] < r.Curve[pct-1] || r.Curve[pct] > min(100, r.Arrived) {
				t.Errorf("%s: curve at %d%% = %.2f (before %.2f)", name, pct, r.Curve[pct], r.Curve[pct-1])
			}
		}
		if again := run(); !reflect.DeepEqual(again.Curve, r.Curve) {
			t.Errorf("%s: two replays of seed 42 differ", name)
		}
	}
}

func TestCSVAndTable(t *testing.T) {
	runs := []*Run{
		{Policy: "fgd", Seed: 42, Curve: []float64{0, 1, 2}, Final: 2, Placed: 3},
		{Policy: "fgd", Seed: 43, Curve: []float64{0, 1, 1.5}, Final: 1.5, Placed: 3, Failed: 1},
	}
	var b bytes.Buffer
	if err := WriteCSV(&b, runs); err != nil {
		t.Fatal(err)
	}
	want := "policy,seed,arrived_pct,gpu_alloc_pct\nfgd,42,0,0.000\nfgd,42,1,1.000\nfgd,42,2,2.000\nfgd,43,0,0.000\nfgd,43,1,1.000\nfgd,43,2,1.500\n"
	if b.String() != want {
		t.Errorf("CSV:\n%s\nwant:\n%s", b.String(), want)
	}
	b.Reset()
	if err := WriteTable(&b, "default", []string{"fgd"}, runs); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "95.2") || !strings.Contains(b.String(), "1.75") {
		t.Errorf("table without the paper's figure or the mean at 130%%:\n%s", b.String())
	}
	b.Reset()
	if err := WriteSVG(&b, "t", []string{"fgd"}, runs); err != nil || !strings.Contains(b.String(), "<polyline") {
		t.Errorf("SVG: %v\n%s", err, b.String())
	}
}

func TestParseFlags(t *testing.T) {
	if s, err := ParseSeeds("42-45"); err != nil || !reflect.DeepEqual(s, []uint64{42, 43, 44, 45}) {
		t.Errorf("42-45: %v %v", s, err)
	}
	if s, err := ParseSeeds("1,7"); err != nil || !reflect.DeepEqual(s, []uint64{1, 7}) {
		t.Errorf("1,7: %v %v", s, err)
	}
	for _, bad := range []string{"", "x", "5-2", "1-", "1,,2", "0-5000"} {
		if _, err := ParseSeeds(bad); err == nil {
			t.Errorf("seeds %q accepted", bad)
		}
	}
	if p, err := ParsePolicies("all"); err != nil || !reflect.DeepEqual(p, placement.Names()) {
		t.Errorf("all: %v %v", p, err)
	}
	if _, err := ParsePolicies("fgd,nope"); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Errorf("an unknown policy: %v", err)
	}
}

// seeing records the workers a replay presents and takes the first.
type seeing struct{ ids [][]string }

func (s *seeing) Name() string { return "seeing" }
func (s *seeing) Order(ws []placement.Worker) {
	ids := make([]string, len(ws))
	for i, w := range ws {
		ids[i] = w.ID
	}
	s.ids = append(s.ids, ids)
}
func (s *seeing) Assign(app placement.App, ws []placement.Worker) []int {
	out := make([]int, len(ws))
	out[0] = app.CoresPerExecutor
	return out
}

// A replay presents the trace's cluster: every node once, in an order drawn
// from the seed, and the ratio is of the trace's GPUs.
func TestReplayPresentsEveryNodeOnce(t *testing.T) {
	var nodes []Node
	gpus := 0
	for i := range 40 {
		n := Node{Name: fmt.Sprintf("n%02d", i), MilliCPU: 8000, MemMiB: 1024, GPUs: 1 + i%8}
		nodes = append(nodes, n)
		gpus += n.GPUs
	}
	one := []Task{{Name: "t", MilliCPU: 1000, MemMiB: 1, GPUs: 1, GPUMilli: 1000}}
	orders := map[string]bool{}
	for seed := range uint64(20) {
		p := &seeing{}
		run, err := Replay(nodes, one, p, seed)
		if err != nil {
			t.Fatal(err)
		}
		orders[strings.Join(p.ids[0], ",")] = true
		seen := slices.Clone(p.ids[0])
		slices.Sort(seen)
		if distinct := len(slices.Compact(seen)); len(p.ids[0]) != len(nodes) || distinct != len(nodes) {
			t.Fatalf("seed %d presented %d workers, %d distinct, of %d nodes", seed, len(p.ids[0]), distinct, len(nodes))
		}
		if want := 100 / float64(gpus); math.Abs(run.Final-want) > 1e-9 {
			t.Errorf("seed %d: one GPU of %d is %.4f%%, want %.4f%%", seed, gpus, run.Final, want)
		}
	}
	if len(orders) < 15 {
		t.Errorf("20 seeds gave %d orders", len(orders))
	}
}

// fgd and frag-fit decide through a fleet: the same decisions as
// placement.PlaceOne over every node (the same curve, every task placed
// alike), on the fixture scaled to 300 nodes, with its constraints.
func TestFleetReplaysAsPlaceOne(t *testing.T) {
	nodes, tasks := fixture(t)
	nodes = Scale(nodes, 300)
	capacity := 0
	for _, n := range nodes {
		capacity += n.GPUs * placement.Whole
	}
	for _, name := range []string{"fgd", "frag-fit"} {
		for seed := range uint64(3) {
			arrivals := Arrivals(tasks, capacity, TuneRatio, seed)
			p1, _ := NewPolicy(name, seed, tasks, nodes)
			fast, err := Replay(nodes, arrivals, p1, seed)
			if err != nil {
				t.Fatal(err)
			}
			p2, _ := NewPolicy(name, seed, tasks, nodes)
			slow, err := ReplayExhaustive(nodes, arrivals, p2, seed)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(fast.Curve, slow.Curve) || fast.Placed != slow.Placed || fast.Placed == 0 || fast.Failed == 0 {
				t.Errorf("%s seed %d: fleet placed %d (curve %v), PlaceOne %d (%v)", name, seed, fast.Placed, fast.Curve, slow.Placed, slow.Curve)
			}
		}
	}
}

// Scale keeps the node list's mix and gives every node a name of its own.
func TestScale(t *testing.T) {
	nodes, _ := fixture(t)
	big := Scale(nodes, 7)
	names := map[string]bool{}
	for i, n := range big {
		names[n.Name] = true
		if want := nodes[i%len(nodes)]; n.GPUs != want.GPUs || n.Model != want.Model || n.MilliCPU != want.MilliCPU || !strings.HasPrefix(n.Name, want.Name+"-") {
			t.Errorf("node %d: %+v, want one like %+v", i, n, want)
		}
	}
	if len(big) != 7 || len(names) != 7 {
		t.Errorf("%d nodes, %d names", len(big), len(names))
	}
}
