// Package spawn starts child processes so that they die with their parent.
//
// Linux sends a child's Pdeathsig when the thread that forked it exits, not
// when the process does (golang/go#27505), and Go may end or reuse an
// ordinary goroutine's thread at any time, which would SIGKILL children at
// random. So one goroutine, locked to its OS thread and never returning,
// starts every child of the process: its thread lives as long as the
// process, and a child started with Attr then dies with the process, even
// one killed with SIGKILL. It is shared by everything in the process that
// starts children this way (a worker, several workers in a test, a
// benchmark tool and the cluster it runs).
package spawn

import (
	"context"
	"os/exec"
	"runtime"
	"sync"
)

var (
	once sync.Once
	reqs chan request
)

type request struct {
	cmd     *exec.Cmd
	started func(pid int) // run on the spawner thread right after a Start
	done    chan error
}

func spawner(reqs <-chan request) {
	runtime.LockOSThread() // never unlocked: this thread must outlive every child
	for r := range reqs {
		err := r.cmd.Start()
		if err == nil && r.started != nil {
			r.started(r.cmd.Process.Pid)
		}
		r.done <- err
	}
}

// Start starts cmd from the spawner thread and, when started is not nil,
// calls it with the child's pid on that thread right after a successful
// Start, before any hand-off to another goroutine: the child runs already
// and may start children of its own, so whoever must know of it (the
// worker's guardian) learns of it as soon as possible. started must be
// quick: every Start of the process waits for it.
//
// ctx bounds only the wait for the spawner (busy with other Starts); Start
// itself is quick and cannot be interrupted. Set cmd.SysProcAttr to Attr()
// (or to something with its Pdeathsig) for the child to die with this
// process.
func Start(ctx context.Context, cmd *exec.Cmd, started func(pid int)) error {
	once.Do(func() {
		reqs = make(chan request)
		go spawner(reqs)
	})
	r := request{cmd: cmd, started: started, done: make(chan error, 1)}
	select {
	case reqs <- r:
	case <-ctx.Done():
		return ctx.Err()
	}
	return <-r.done
}
