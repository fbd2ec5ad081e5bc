//go:build !linux

package worker

import "errors"

type cgroups struct {
	v2   bool
	base map[string]string
}

type cgroup struct{ memoryMB int }

func setupCgroups(string, int, ...int) (*cgroups, error) {
	return nil, errors.New("cgroups exist on Linux only")
}

func (c *cgroups) create(string, int, int) (*cgroup, error) { return nil, errors.New("no cgroups") }
func (g *cgroup) kill()                                     {}
func (g *cgroup) oomKilled() bool                           { return false }
func (g *cgroup) remove()                                   {}

func (c *cgroups) close() {}

func killCgroups([]string) {}

func (g *cgroup) join(int) error { return nil }
