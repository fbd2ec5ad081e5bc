package ui

import (
	"fmt"
	"maps"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/berth-cluster/berth/wire"
)

// The queues page: how the leader divides the cluster between the queues
// (docs/QUEUES.md). Every queue's dominant share is drawn against its fair
// share on one scale, the cluster's capacity, so that a queue above what
// it is owed (what preemption may take back) and one below it with demand
// waiting (what is reclaimed for) stand out without reading numbers.

// queuesData is the queues page's.
type queuesData struct {
	Capacity      wire.Amount
	Queues        pageOf[queueRow]
	Apps, Drivers int // in all queues
}

// queueRow is one queue and its bar.
type queueRow struct {
	Q wire.QueueStatus
	// Use and Fair are its dominant share and fair dominant share as
	// widths on the bar's scale (shareScale: the whole cluster).
	Use, Fair int
	// Standing colours the bar: "over" its fair share, "owed" (below it
	// with demand waiting), or "fair".
	Standing string
}

// shareScale is the bar's width for the whole cluster (its viewBox: the
// bar itself stretches to its cell).
const shareScale = 1000

// shareSlack is how far a dominant share may be from the fair one and
// still count as at it: the leader's shares are floats, and a queue a
// rounding above its share is not over it.
const shareSlack = 0.005

func rowOf(q wire.QueueStatus) queueRow {
	r := queueRow{Q: q, Use: onScale(q.DominantShare), Fair: onScale(q.FairDominantShare), Standing: "fair"}
	switch {
	case q.DominantShare > q.FairDominantShare+shareSlack:
		r.Standing = "over"
	case q.DominantShare < q.FairDominantShare-shareSlack && !isNothing(q.Waiting):
		r.Standing = "owed"
	}
	return r
}

// onScale is a share of the cluster as a width on the bar, clamped: a
// queue holds at most the cluster (a share above it, while the workers
// that held it leave, fills the bar).
func onScale(share float64) int {
	if math.IsNaN(share) {
		return 0
	}
	return int(math.Round(min(max(share, 0), 1) * shareScale))
}

// queues is the queues page. Only the leader knows what the queues hold
// and are owed (its scheduling rounds work it out): a follower's page says
// so and links to the leader's.
func (u *server) queues(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := pageCtx(r)
	defer cancel()
	qs, err := u.o.Source.Queues(ctx)
	if err != nil {
		if from := roleOfErr(err); from.Follower {
			u.render(w, r, http.StatusOK, "queues", from, nil)
			return
		}
		u.fail(w, r, role{}, err)
		return
	}
	d := queuesData{Capacity: qs.Capacity}
	rows := make([]queueRow, len(qs.Queues))
	for i, q := range qs.Queues {
		rows[i] = rowOf(q)
		d.Apps, d.Drivers = d.Apps+q.Apps, d.Drivers+q.Drivers
	}
	d.Queues = paginate(rows, r, "queues")
	u.render(w, r, http.StatusOK, "queues", role{}, d)
}

func isNothing(a wire.Amount) bool {
	return a.Cores == 0 && a.MemoryMB == 0 && len(a.Resources) == 0
}

// amount renders an amount for people, "3 cores, 192 MiB, gpu 1", or
// none when it is nothing.
func amount(a wire.Amount, none string) string {
	var parts []string
	switch {
	case a.Cores == 1:
		parts = append(parts, "1 core")
	case a.Cores > 0:
		parts = append(parts, fmt.Sprintf("%d cores", a.Cores))
	}
	if a.MemoryMB > 0 {
		parts = append(parts, mb(a.MemoryMB))
	}
	for _, name := range slices.Sorted(maps.Keys(a.Resources)) {
		parts = append(parts, name+" "+strconv.FormatFloat(a.Resources[name], 'f', -1, 64))
	}
	if len(parts) == 0 {
		return none
	}
	return strings.Join(parts, ", ")
}

// limit renders a queue's limit: what it sets bounds, what it leaves out
// does not.
func limit(l *wire.Amount) string {
	if l == nil {
		return "none"
	}
	return amount(*l, "none")
}

// percent renders a share of the cluster as the CLI does: "33.3%".
func percent(share float64) string { return strconv.FormatFloat(share*100, 'f', 1, 64) + "%" }

// queueOf is the queue of an app or a driver as a page shows it. A master
// names every status's queue already; a Source that leaves it "" (the
// tests' fixed data) means the default, by the wire's one rule.
var queueOf = wire.QueueName
