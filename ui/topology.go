package ui

import (
	"cmp"
	"fmt"
	"hash/fnv"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/berth-cluster/berth/wire"
)

// The topology: every worker as a bar of its cores, each segment an
// executor coloured by its app, so fragmentation (an app shredded into
// many small executors, cores left free in slivers) and a failover's
// re-placement show at a glance. Per app: its executors by size and the
// fewest executors its cores could fit in.

// bar is one worker's cores.
type bar struct {
	W        wire.WorkerStatus
	Segments []segment
	Free     int
}

// segment is one executor's cores on a bar, or a driver's.
type segment struct {
	App    string // "" for a driver
	Label  string
	Cores  int
	Offset int // cores before it on the bar
	Color  string
}

// appShape is how an app's cores are cut.
type appShape struct {
	ID, Name  string
	Color     string
	Cores     int
	Sizes     []sizeCount // executor sizes, largest first
	Executors int
	Fewest    int // the fewest executors its cores could be in, on these workers
}

type sizeCount struct{ Cores, Count int }

// color is an app's colour: the same on every page and every master. An
// app's id ends with the master's counter of apps, n: its hue is slot
// n×hueStep of hueSlots slots round the wheel, so any hueSlots consecutive
// apps get hueSlots different hues, at least 360°/hueSlots (18°) apart,
// the most so many hues can be; the next app is 162° away, and one within
// 8 apps at least 36°. Odd and even apps differ in lightness too (the
// nearest hues, 9 and 11 apps apart, are of one odd and one even), and each
// round of hueSlots apps in saturation. (The golden angle this replaces
// put apps 13 apart 12° apart; a hash of the id gave two apps of a page
// one colour.) An id without a number falls back to a hash.
func color(app string) string {
	if i := strings.LastIndexByte(app, '-'); i >= 0 {
		if n, err := strconv.ParseUint(app[i+1:], 10, 32); err == nil {
			hue := n * hueStep % hueSlots * (360 / hueSlots)
			return fmt.Sprintf("hsl(%d,%d%%,%d%%)", hue, 60+n/hueSlots%3*10, 40+n%2*14)
		}
	}
	h := fnv.New32a()
	h.Write([]byte(app))
	v := h.Sum32()
	return fmt.Sprintf("hsl(%d,%d%%,%d%%)", v%360, 55+v/360%25, 42+v/9000%16)
}

// hueSlots hues round the wheel, stepped hueStep at a time (coprime with
// hueSlots, so each round visits every slot once).
const (
	hueSlots = 20
	hueStep  = 9
)

// bars lays out the executors and drivers of c on its workers.
func bars(c *wire.ClusterStatus) []bar {
	index := map[string]int{}
	out := make([]bar, len(c.Workers))
	for i, w := range c.Workers {
		index[w.ID] = i
		out[i] = bar{W: w}
	}
	for i := range out {
		out[i].Free = out[i].W.Cores // counts down as segments are placed
	}
	place := func(worker string, s segment) {
		if i, ok := index[worker]; ok {
			b := &out[i]
			s.Offset = b.W.Cores - b.Free
			b.Free -= s.Cores
			b.Segments = append(b.Segments, s)
		}
	}
	for _, a := range c.ActiveApps {
		for _, e := range a.Executors {
			if !e.State.Finished() {
				place(e.WorkerID, segment{App: a.ID, Label: fmt.Sprintf("%s (%s) #%d: %d cores", a.ID, a.Name, e.ID, e.Cores), Cores: e.Cores, Color: color(a.ID)})
			}
		}
	}
	for _, d := range c.ActiveDrivers {
		if d.WorkerID != "" && d.State == wire.DriverRunning {
			place(d.WorkerID, segment{Label: fmt.Sprintf("driver %s: %d cores", d.ID, d.Cores), Cores: d.Cores, Color: "#555"})
		}
	}
	for i := range out {
		out[i].Free = max(out[i].Free, 0)
	}
	return out
}

// shapeOf is a's executors by size and the fewest it could have: with a
// fixed executor size, its cores over that size; else as few as the
// largest live workers' cores can hold (caps: their cores, largest first,
// from capacities).
func shapeOf(a wire.AppStatus, caps []int) appShape {
	s := appShape{ID: a.ID, Name: a.Name, Color: color(a.ID)}
	sizes := map[int]int{}
	for _, e := range a.Executors {
		if !e.State.Finished() {
			sizes[e.Cores]++
			s.Cores += e.Cores
			s.Executors++
		}
	}
	for c, n := range sizes {
		s.Sizes = append(s.Sizes, sizeCount{c, n})
	}
	slices.SortFunc(s.Sizes, func(x, y sizeCount) int { return cmp.Compare(y.Cores, x.Cores) })
	s.Fewest = fewest(s.Cores, a.CoresPerExecutor, caps)
	return s
}

// capacities are the live workers' cores, largest first.
func capacities(workers []wire.WorkerStatus) []int {
	var caps []int
	for _, w := range workers {
		if w.State == wire.WorkerAlive {
			caps = append(caps, w.Cores)
		}
	}
	slices.SortFunc(caps, func(x, y int) int { return cmp.Compare(y, x) })
	return caps
}

func fewest(cores, perExecutor int, caps []int) int {
	if cores == 0 {
		return 0
	}
	if perExecutor > 0 {
		return (cores + perExecutor - 1) / perExecutor
	}
	n, sum := 0, 0
	for _, c := range caps {
		if sum >= cores {
			break
		}
		sum += c
		n++
	}
	if sum < cores {
		return 0 // not on these workers (some have left)
	}
	return n
}

type topologyData struct {
	Bars     pageOf[bar]
	Apps     []appShape
	MaxCores int // the widest bar, for the scale
}

func (u *server) topology(w http.ResponseWriter, r *http.Request) {
	c, ok := u.cluster(w, r)
	if !ok {
		return
	}
	all := bars(c)
	d := topologyData{Bars: paginate(all, r, "page")}
	for _, b := range all {
		d.MaxCores = max(d.MaxCores, b.W.Cores)
	}
	caps := capacities(c.Workers)
	for _, a := range c.ActiveApps {
		d.Apps = append(d.Apps, shapeOf(a, caps))
	}
	u.render(w, r, http.StatusOK, "topology", roleOf(c), d)
}
