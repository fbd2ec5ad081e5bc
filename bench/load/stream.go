package load

import (
	"context"
	"sync"
	"time"

	"github.com/berth-cluster/berth/internal/poll"
	"github.com/berth-cluster/berth/wire"
)

// eventLog keeps an app's stream events with the time each was read.
type eventLog struct {
	mu  sync.Mutex
	evs []timedEvent
}

func (l *eventLog) add(ev timedEvent) {
	l.mu.Lock()
	l.evs = append(l.evs, ev)
	l.mu.Unlock()
}

func (l *eventLog) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.evs)
}

// lost lists, from index i on, the executorLost events of worker id.
func (l *eventLog) lost(i int, id string) []timedEvent {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []timedEvent
	for _, ev := range l.evs[min(i, len(l.evs)):] {
		if ev.Type == wire.EventExecutorLost && ev.Executor != nil && ev.Executor.WorkerID == id {
			out = append(out, ev)
		}
	}
	return out
}

// keepStream holds the app's event stream open (its lease) until ctx ends
// or the app is removed, reopening it if the master closes it otherwise.
func keepStream(ctx context.Context, mc *masterClient, appID string, log *eventLog, f *fleet, wg *sync.WaitGroup) {
	wg.Add(1)
	go func() {
		defer wg.Done()
		removed := false
		for ctx.Err() == nil && !removed {
			err := mc.streamEvents(ctx, appID, func(ev timedEvent) {
				removed = removed || ev.Type == wire.EventAppRemoved
				log.add(ev)
			})
			if ctx.Err() != nil || removed {
				return
			}
			f.note("stream", "event stream of %s ended: %v; reopening", appID, err)
			poll.Sleep(ctx, 100*time.Millisecond)
		}
	}()
}
