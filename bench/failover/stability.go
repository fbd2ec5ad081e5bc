package failover

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/berth-cluster/berth/client"
	"github.com/berth-cluster/berth/internal/poll"
)

// scenarioSteady: the cluster under load and no fault, for
// --steady-duration: the Raft profile must elect only when it must.
const scenarioSteady = "steady"

// Stability is the steady scenario's outcome: a loaded cluster with no
// fault, watched for leader changes.
type Stability struct {
	Seconds       float64 `json:"seconds"`
	Clients       int     `json:"clients"`
	Registrations int64   `json:"registrations"`
	Kills         int64   `json:"kills"`
	Errors        int64   `json:"errors"`
	FirstError    string  `json:"firstError,omitempty"`
	// LeaderChanges counts the times the masters' answers named another
	// leader than before; EpochFirst and EpochLast the epochs seen (every
	// new leadership bumps it).
	LeaderChanges int      `json:"leaderChanges"`
	EpochFirst    uint64   `json:"epochFirst"`
	EpochLast     uint64   `json:"epochLast"`
	Leaders       []string `json:"leaders"`
	Polls         int      `json:"polls"`
}

func (s Stability) line() string {
	line := fmt.Sprintf("steady for %.0f s: %d clients registered %d apps and killed %d (%.0f a second); leader changes %d (epoch %d → %d, leaders %v) over %d reads",
		s.Seconds, s.Clients, s.Registrations, s.Kills, float64(s.Registrations+s.Kills)/max(s.Seconds, 1), s.LeaderChanges, s.EpochFirst, s.EpochLast, s.Leaders, s.Polls)
	if s.Errors > 0 {
		line += fmt.Sprintf("; ERRORS %d: %s", s.Errors, s.FirstError)
	}
	return line
}

// stability loads the cluster for d: clients registering and killing apps
// one after the other (each acknowledged once committed), the workers
// heartbeating and the app's client on its event stream as always; every
// master's view is read every second. Any change of leader is reported.
func (cl *cluster) stability(ctx context.Context, d time.Duration, clients int, progress func(string)) (Stability, error) {
	res := Stability{Clients: clients}
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	start := time.Now()
	var regs, kills, errs atomic.Int64
	var firstErr atomic.Value
	fail := func(err error) {
		if errs.Add(1) == 1 {
			firstErr.Store(err.Error())
		}
	}
	var wg sync.WaitGroup
	for i := range clients {
		c, err := client.New(cl.urls(), cl.cfg.secret, cl.pki.ClientOption())
		if err != nil {
			return res, err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; ctx.Err() == nil; n++ {
				id, err := c.RegisterApp(ctx, submitApp(fmt.Sprintf("steady-%d-%d", i, n)))
				if err != nil {
					if ctx.Err() == nil {
						fail(err)
					}
					continue
				}
				regs.Add(1)
				if _, err := c.KillApp(context.WithoutCancel(ctx), id); err != nil {
					fail(err)
					continue
				}
				kills.Add(1)
			}
		}()
	}
	last := ""
	for ctx.Err() == nil {
		for _, m := range cl.masters {
			st, err := cl.status(ctx, m.url, 5*time.Second)
			if err != nil || st.LeaderID == "" {
				continue
			}
			res.Polls++
			if res.EpochFirst == 0 {
				res.EpochFirst = st.Epoch
			}
			res.EpochLast = max(res.EpochLast, st.Epoch)
			if st.LeaderID != last {
				if last != "" {
					res.LeaderChanges++
					progress(fmt.Sprintf("steady: leader changed from %s to %s after %s", last, st.LeaderID, time.Since(start).Round(time.Second)))
				}
				last = st.LeaderID
				res.Leaders = append(res.Leaders, last)
			}
		}
		if !poll.Sleep(ctx, time.Second) {
			break
		}
	}
	wg.Wait()
	res.Seconds = time.Since(start).Seconds()
	res.Registrations, res.Kills, res.Errors = regs.Load(), kills.Load(), errs.Load()
	if s, ok := firstErr.Load().(string); ok {
		res.FirstError = s
	}
	return res, nil
}
