package master

import (
	"maps"
	"slices"
)

// Ports (docs/HEALTH.md): each worker's pool is a scheduler.PortPool; the
// scheduler picks a process's ports with its placement, the master holds
// them with the process and writes them with its record.

// sortedPorts lists ports' labels in order, for logs.
func sortedPorts(ports map[string]int) []string { return slices.Sorted(maps.Keys(ports)) }
