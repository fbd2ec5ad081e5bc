package wire

import (
	"slices"
	"testing"
)

// WorkerSummary.Add counts each custom resource by name, the names in
// order whatever order the workers list them in: every address offered,
// and the wholly free ones of ALIVE workers only.
func TestWorkerSummaryCountsResources(t *testing.T) {
	var s WorkerSummary
	s.Add(WorkerStatus{State: WorkerAlive, Resources: []ResourceUse{
		{Name: "gpu", Addresses: []string{"0", "1"}, Used: []float64{0.5, 0}, Free: 1},
		{Name: "fpga", Addresses: []string{"a"}, Used: []float64{0}, Free: 1},
	}})
	s.Add(WorkerStatus{State: WorkerDead, Resources: []ResourceUse{{Name: "gpu", Addresses: []string{"0"}, Used: []float64{0}, Free: 1}}})
	s.Add(WorkerStatus{State: WorkerDecommissioning, Resources: []ResourceUse{{Name: "asic", Addresses: []string{"x"}, Used: []float64{0}, Free: 1}}})
	s.Add(WorkerStatus{State: WorkerAlive})
	want := []ResourceTotal{{Name: "asic", Addresses: 1}, {Name: "fpga", Addresses: 1, Free: 1}, {Name: "gpu", Addresses: 3, Free: 1}}
	if !slices.Equal(s.Resources, want) {
		t.Errorf("resources %+v, want %+v", s.Resources, want)
	}
	if got := DescribeTotals(s.Resources); got != "asic 0/1 free, fpga 1/1 free, gpu 1/3 free" {
		t.Errorf("described %q", got)
	}
	if s.Total != 4 || s.Alive != 2 {
		t.Errorf("counts %+v", s)
	}
}
