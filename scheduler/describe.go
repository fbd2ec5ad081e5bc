package scheduler

import (
	"fmt"
	"maps"
	"slices"

	"github.com/berth-cluster/berth/wire"
)

// DescribeAmount renders an amount: "cores 16, memory 32768 MB, gpu 2".
func DescribeAmount(a wire.Amount) string {
	s := ""
	add := func(part string) {
		if s != "" {
			s += ", "
		}
		s += part
	}
	if a.Cores > 0 {
		add(fmt.Sprintf("cores %d", a.Cores))
	}
	if a.MemoryMB > 0 {
		add(fmt.Sprintf("memory %d MB", a.MemoryMB))
	}
	for _, r := range slices.Sorted(maps.Keys(a.Resources)) {
		add(fmt.Sprintf("%s %v", r, a.Resources[r]))
	}
	if s == "" {
		return "nothing"
	}
	return s
}
