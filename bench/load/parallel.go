package load

import (
	"context"
	"sync"
	"sync/atomic"
)

// inParallel calls do(i) for every i in [0, n), from up to parallel
// goroutines that each take the next i as soon as they are free (a slow
// request holds up one of them, not a batch). A goroutine whose do fails
// stops; the others go on until every i is taken or ctx ends. It returns
// when all have stopped, with the first error.
func inParallel(ctx context.Context, n, parallel int, do func(i int) error) error {
	var (
		next     atomic.Int64
		firstErr error
		errOnce  sync.Once
		wg       sync.WaitGroup
	)
	for range max(1, min(parallel, n)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n || ctx.Err() != nil {
					return
				}
				if err := do(i); err != nil {
					errOnce.Do(func() { firstErr = err })
					return
				}
			}
		}()
	}
	wg.Wait()
	return firstErr
}
