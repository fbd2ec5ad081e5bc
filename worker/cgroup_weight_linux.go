//go:build linux

package worker

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
)

// weigh sets the parent group's CPU weight for a worker offering cores.
func (c *cgroups) weigh(cores int) error {
	dir, ok := c.base["cpu"]
	if c.v2 {
		dir, ok = c.base[""]
	}
	if !ok {
		return nil
	}
	file, value := parentWeight(cores, runtime.NumCPU(), c.v2)
	if err := os.WriteFile(filepath.Join(dir, file), []byte(value), 0); err != nil {
		return fmt.Errorf("weighing the executors' parent group: %w", err)
	}
	return nil
}
