package testcluster

import (
	"fmt"
	"io"
	"sync"
)

// CommandHost is the Host of a command rather than a test: it runs the
// cleanups registered with it (the kills of the processes Start started)
// when Close is called, and writes Logf's lines to Log.
type CommandHost struct {
	Log io.Writer // nil: Logf writes nothing

	mu       sync.Mutex
	cleanups []func()
}

// Cleanup registers f for the next Close.
func (h *CommandHost) Cleanup(f func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.cleanups = append(h.cleanups, f)
}

// Logf writes one line to Log.
func (h *CommandHost) Logf(format string, args ...any) {
	if h.Log != nil {
		fmt.Fprintf(h.Log, format+"\n", args...)
	}
}

// Close runs the cleanups registered so far, the latest first, as a test
// does. It may be called again: it then runs those registered since.
func (h *CommandHost) Close() {
	h.mu.Lock()
	fs := h.cleanups
	h.cleanups = nil
	h.mu.Unlock()
	for i := len(fs) - 1; i >= 0; i-- {
		fs[i]()
	}
}
