package chaos

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/berth-cluster/berth/internal/poll"
	"github.com/berth-cluster/berth/testkit/testcluster"
	"github.com/berth-cluster/berth/wire"
)

// leaderWatch asks every master for its view, all along, and records the
// answers given as the leader's, to check that two masters never answered
// as the leader at once.
type leaderWatch struct {
	mu  sync.Mutex
	obs []leaderObs
	n   int // answers seen, of any view
}

// leaderObs is one answer given as the leader's view.
type leaderObs struct {
	master     string
	epoch      uint64
	start, end time.Time
}

func (lw *leaderWatch) run(ctx context.Context, cl *testcluster.Cluster) {
	for ctx.Err() == nil {
		var wg sync.WaitGroup
		for _, m := range cl.Masters {
			wg.Add(1)
			go func() {
				defer wg.Done()
				qctx, cancel := context.WithTimeout(ctx, time.Second)
				defer cancel()
				start := time.Now()
				st, err := cl.Status(qctx, m)
				end := time.Now()
				if err != nil {
					return
				}
				lw.mu.Lock()
				defer lw.mu.Unlock()
				lw.n++
				if st.View == wire.ViewLeader {
					lw.obs = append(lw.obs, leaderObs{master: m.ID, epoch: st.Epoch, start: start, end: end})
				}
			}()
		}
		wg.Wait()
		poll.Sleep(ctx, 25*time.Millisecond)
	}
}

// violations lists the pairs of leader answers that no single leader at a
// time could have given: an answer with an older epoch than one completed
// before it started, or one epoch answered by two masters.
func (lw *leaderWatch) violations() []string {
	lw.mu.Lock()
	obs := slices.Clone(lw.obs)
	lw.mu.Unlock()
	var out []string
	byEpoch := map[uint64]string{}
	for _, o := range obs {
		if m, ok := byEpoch[o.epoch]; ok && m != o.master {
			out = append(out, fmt.Sprintf("epoch %d answered as the leader by %s and %s", o.epoch, m, o.master))
		}
		byEpoch[o.epoch] = o.master
	}
	byEnd := slices.Clone(obs)
	sort.Slice(byEnd, func(i, j int) bool { return byEnd[i].end.Before(byEnd[j].end) })
	sort.Slice(obs, func(i, j int) bool { return obs[i].start.Before(obs[j].start) })
	var newest leaderObs // highest epoch among answers completed so far
	k := 0
	for _, o := range obs {
		for ; k < len(byEnd) && byEnd[k].end.Before(o.start); k++ {
			if byEnd[k].epoch > newest.epoch {
				newest = byEnd[k]
			}
		}
		if o.epoch < newest.epoch {
			out = append(out, fmt.Sprintf("%s answered as the leader of epoch %d at %s, after %s had answered for epoch %d",
				o.master, o.epoch, o.start.Format("15:04:05.000"), newest.master, newest.epoch))
		}
	}
	return out
}

func (lw *leaderWatch) counts() (answers, asLeader int) {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	return lw.n, len(lw.obs)
}

// pidWatch samples the executor processes of the long-running apps: each
// must keep the same pids for the whole run.
type pidWatch struct {
	mu       sync.Mutex
	baseline map[string][]int // marker → pids
	changes  []string
}

// pidsContaining lists the processes whose command line contains s.
func pidsContaining(s string) []int {
	var out []int
	for _, p := range testcluster.Processes() {
		if strings.Contains(p.Cmdline, s) && p.Pid != os.Getpid() {
			out = append(out, p.Pid)
		}
	}
	return out
}

// executorPids finds the processes whose command line ends with one of the
// markers (a forked child not yet exec'd has its parent's command line:
// skipped).
func executorPids(markers []string) map[string][]int {
	out := map[string][]int{}
	ps := testcluster.Processes()
	cmdlineOf := map[int]string{}
	for _, p := range ps {
		cmdlineOf[p.Pid] = p.Cmdline
	}
	for _, p := range ps {
		for _, m := range markers {
			if strings.HasPrefix(p.Cmdline, "sleep ") && strings.HasSuffix(p.Cmdline, " "+m) && cmdlineOf[p.PPid] != p.Cmdline {
				out[m] = append(out[m], p.Pid)
			}
		}
	}
	for m := range out {
		slices.Sort(out[m])
	}
	return out
}

func (pw *pidWatch) run(ctx context.Context, markers []string) {
	pw.mu.Lock()
	pw.baseline = executorPids(markers)
	pw.mu.Unlock()
	for poll.Sleep(ctx, 200*time.Millisecond) {
		now := executorPids(markers)
		pw.mu.Lock()
		for _, m := range markers {
			if !slices.Equal(now[m], pw.baseline[m]) {
				pw.changes = append(pw.changes, fmt.Sprintf("%s: executor pids %v, were %v at %s", m, now[m], pw.baseline[m], time.Now().Format("15:04:05.000")))
				pw.baseline[m] = now[m]
			}
		}
		pw.mu.Unlock()
	}
}

func (pw *pidWatch) violations() []string {
	pw.mu.Lock()
	defer pw.mu.Unlock()
	return slices.Clone(pw.changes)
}
