// Package openb replays the Alibaba GPU cluster trace ("openb", the FGD
// paper's) through berth's placement policies with the paper's method, and
// reports the GPU allocation ratio as tasks arrive (placebench openb).
package openb

import (
	"encoding/csv"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/berth-cluster/berth/placement"
	"github.com/berth-cluster/berth/placement/gpushare"
)

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
		if err != nil {
			return nil, fmt.Errorf("%s row %d: %w", path, i+2, err)
		}
		nodes = append(nodes, n)
	}
	return nodes, nil
}

// LoadTasks reads a task list (name, cpu_milli, memory_mib, num_gpu,
// gpu_milli; other columns are ignored).
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
