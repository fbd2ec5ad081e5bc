// Package openb replays the Alibaba GPU cluster trace ("openb", the FGD
// paper's) through berth's placement policies with the paper's method, and
// reports the GPU allocation ratio as tasks arrive (placebench openb).
package openb

import (
	"encoding/csv"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/berth-cluster/berth/placement"
	"github.com/berth-cluster/berth/placement/gpushare"
	"github.com/berth-cluster/berth/wire"
)

// ModelLabel is the label a node's GPU model is given (worker --label
// gpu-model=T4), and the one a task's gpu_spec constrains.
const ModelLabel = "gpu-model"

// Node is one machine of the trace.
type Node struct {
	Name     string
	MilliCPU int
	MemMiB   int
	GPUs     int
	Model    string
}

// Task is one task (pod) of the trace.
type Task struct {
	Name     string
	MilliCPU int
	MemMiB   int
	GPUs     int // number of GPUs
	GPUMilli int // per GPU: below 1000 a share of one
	// Spec is the GPU models the task accepts, as the trace writes them
	// ("T4", "P100|T4|V100M16": any of them); "" for any model.
	Spec string
}

// Models are the GPU models the task accepts (Spec's), nil for any.
func (t Task) Models() []string {
	var out []string
	for _, m := range strings.Split(t.Spec, "|") {
		if m != "" && !slices.Contains(out, m) {
			out = append(out, m)
		}
	}
	return out
}

// Constraints are the task's as an app's: gpu-model in its models, for a
// task that asks GPUs and names models (the paper's simulator checks the
// model of GPU tasks only, in its GPU-sharing filter); nil otherwise.
func (t Task) Constraints() []wire.Constraint {
	if t.GPUs == 0 || t.GPUMilli == 0 {
		return nil
	}
	if models := t.Models(); len(models) > 0 {
		return []wire.Constraint{{Label: ModelLabel, In: models}}
	}
	return nil
}

// Labels are a node's labels: its GPU model as gpu-model (none when the
// trace gives no model).
func (n Node) Labels() map[string]string {
	if n.Model == "" {
		return nil
	}
	return map[string]string{ModelLabel: n.Model}
}

// GPUMilli is the GPU thousandths the task takes in all.
func (t Task) TotalGPUMilli() int { return t.GPUs * t.GPUMilli }

// app is the task as placement sees it: one executor of its CPU (in
// milli-cores), memory and GPUs.
func (t Task) app() placement.App {
	cpu := max(t.MilliCPU, 1)
	a := placement.App{ID: t.Name, CoresLeft: cpu, CoresPerExecutor: cpu, MemoryPerExecutorMB: t.MemMiB, ExecutorLimit: 1}
	if t.GPUs > 0 && t.GPUMilli > 0 {
		a.ResourcesPerExecutor = map[string]int{gpushare.GPU: t.TotalGPUMilli()}
	}
	return a
}

// Scale is a cluster of n nodes with nodes' mix: node i is nodes[i mod
// len(nodes)], named after it with "-" and the round it is of (the
// trace's 1,213 nodes make 100,000 in 83 rounds, the last one short).
func Scale(nodes []Node, n int) []Node {
	if len(nodes) == 0 {
		return nil
	}
	out := make([]Node, n)
	for i := range out {
		out[i] = nodes[i%len(nodes)]
		out[i].Name = fmt.Sprintf("%s-%d", out[i].Name, i/len(nodes))
	}
	return out
}

// LoadNodes reads a node list (sn, cpu_milli, memory_mib, gpu, model).
func LoadNodes(path string) ([]Node, error) {
	rows, err := readCSV(path, "sn", "cpu_milli", "memory_mib", "gpu")
	if err != nil {
		return nil, err
	}
	nodes := make([]Node, 0, len(rows))
	for i, r := range rows {
		n := Node{Name: r.text("sn"), Model: r.text("model")}
		if n.MilliCPU, err = r.int("cpu_milli"); err == nil {
			if n.MemMiB, err = r.int("memory_mib"); err == nil {
				n.GPUs, err = r.int("gpu")
			}
		}
		if err == nil && n.Model != "" {
			err = wire.CheckLabelValue(ModelLabel, n.Model)
		}
		if err != nil {
			return nil, fmt.Errorf("%s row %d: %w", path, i+2, err)
		}
		nodes = append(nodes, n)
	}
	return nodes, nil
}

// LoadTasks reads a task list (name, cpu_milli, memory_mib, num_gpu,
// gpu_milli, and gpu_spec where the list has it; other columns are
// ignored).
func LoadTasks(path string) ([]Task, error) {
	rows, err := readCSV(path, "name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli")
	if err != nil {
		return nil, err
	}
	tasks := make([]Task, 0, len(rows))
	for i, r := range rows {
		t := Task{Name: r.text("name")}
		if t.MilliCPU, err = r.int("cpu_milli"); err == nil {
			if t.MemMiB, err = r.int("memory_mib"); err == nil {
				if t.GPUs, err = r.int("num_gpu"); err == nil {
					t.GPUMilli, err = r.int("gpu_milli")
				}
			}
		}
		if err == nil && (t.GPUMilli > 1000 || (t.GPUMilli < 1000 && t.GPUs > 1)) {
			err = fmt.Errorf("task %s asks %d GPUs of %d thousandths: a share is of one GPU", t.Name, t.GPUs, t.GPUMilli)
		}
		if t.Spec = r.text("gpu_spec"); err == nil {
			for _, m := range t.Models() {
				if err = wire.CheckLabelValue(ModelLabel, m); err != nil {
					err = fmt.Errorf("task %s: gpu_spec %q: %w", t.Name, t.Spec, err)
					break
				}
			}
		}
		if err != nil {
			return nil, fmt.Errorf("%s row %d: %w", path, i+2, err)
		}
		tasks = append(tasks, t)
	}
	return tasks, nil
}

type row struct {
	cols   map[string]int
	fields []string
}

func (r row) text(col string) string {
	if i, ok := r.cols[col]; ok && i < len(r.fields) {
		return r.fields[i]
	}
	return ""
}

func (r row) int(col string) (int, error) {
	v, err := strconv.Atoi(r.text(col))
	if err != nil || v < 0 {
		return 0, fmt.Errorf("column %s: %q is not a count", col, r.text(col))
	}
	return v, nil
}

// readCSV reads a CSV file with a header naming at least want.
func readCSV(path string, want ...string) ([]row, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	rd := csv.NewReader(f)
	rd.FieldsPerRecord = -1
	header, err := rd.Read()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	cols := map[string]int{}
	for i, h := range header {
		cols[h] = i
	}
	for _, w := range want {
		if _, ok := cols[w]; !ok {
			return nil, fmt.Errorf("%s: no column %q in the header %v", path, w, header)
		}
	}
	var rows []row
	for {
		fields, err := rd.Read()
		if err == io.EOF {
			return rows, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		rows = append(rows, row{cols: cols, fields: fields})
	}
}
