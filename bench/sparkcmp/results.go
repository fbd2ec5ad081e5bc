package sparkcmp

import (
	"fmt"
	"math"
	"slices"
	"sync"
	"time"
)

// figure is one measured quantity of a section, per system, in the order
// the rounds measured it.
type figure struct {
	section, name string
	values        map[string][]float64 // system name → values
	digits        int                  // decimals shown
}

// stats are a figure's summary for one system: nearest-rank percentiles
// over its rounds (always a value that was seen).
type stats struct {
	n             int
	p50, p90, max float64
}

func summarize(vs []float64) stats {
	if len(vs) == 0 {
		return stats{}
	}
	s := slices.Clone(vs)
	slices.Sort(s)
	rank := func(p float64) float64 { return s[max(int(math.Ceil(p/100*float64(len(s)))), 1)-1] }
	return stats{n: len(s), p50: rank(50), p90: rank(90), max: s[len(s)-1]}
}

// results are what the measures found: figures, the tables and notes of
// each section, in the order the sections were first written to.
type results struct {
	mu       sync.Mutex
	sections []string
	intro    map[string][]string // section → its opening paragraph lines
	figures  []*figure
	tables   map[string][]string // section → markdown lines after its figures
	notes    map[string][]string // section → what went wrong or is worth saying
}

func newResults() *results {
	return &results{intro: map[string][]string{}, tables: map[string][]string{}, notes: map[string][]string{}}
}

func (r *results) section(name string) {
	if !slices.Contains(r.sections, name) {
		r.sections = append(r.sections, name)
	}
}

// describe sets what a section's opening says (once: the first call wins).
func (r *results) describe(section string, lines ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.section(section)
	if len(r.intro[section]) == 0 {
		r.intro[section] = lines
	}
}

// add records one round's value of a figure for a system.
func (r *results) add(section, name, system string, v float64, digits int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.section(section)
	for _, f := range r.figures {
		if f.section == section && f.name == name {
			f.values[system] = append(f.values[system], v)
			return
		}
	}
	r.figures = append(r.figures, &figure{section: section, name: name, values: map[string][]float64{system: {v}}, digits: digits})
}

// seconds records a duration in seconds, to the hundredth.
func (r *results) seconds(section, name, system string, d time.Duration) {
	r.add(section, name, system, d.Seconds(), 2)
}

func (r *results) table(section string, lines ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.section(section)
	r.tables[section] = append(r.tables[section], lines...)
}

func (r *results) note(section, format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.section(section)
	r.notes[section] = append(r.notes[section], fmt.Sprintf(format, args...))
}

// lookup is a figure's summary for a system; false if it was never
// measured there.
func (r *results) lookup(section, name, system string) (stats, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, f := range r.figures {
		if f.section == section && f.name == name && len(f.values[system]) > 0 {
			return summarize(f.values[system]), true
		}
	}
	return stats{}, false
}

// sectionFigures are the figures of a section, in the order first added.
func (r *results) sectionFigures(section string) []*figure {
	var out []*figure
	for _, f := range r.figures {
		if f.section == section {
			out = append(out, f)
		}
	}
	return out
}

// problems counts the notes of every section.
func (r *results) problems() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, ns := range r.notes {
		n += len(ns)
	}
	return n
}
