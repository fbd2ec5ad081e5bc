package ui

import (
	"fmt"
	"html/template"
	"strconv"
	"strings"
	"time"

	"github.com/berth-cluster/berth/wire"
)

// pageNames are the pages; each is templates/NAME.html inside layout.html.
var pageNames = []string{"overview", "topology", "queues", "worker", "app", "driver", "logs", "signin", "error", "workerui", "confirm", "refused"}

func parse() map[string]*template.Template {
	out := map[string]*template.Template{}
	for _, name := range pageNames {
		out[name] = template.Must(template.New("layout").Funcs(funcs).ParseFS(assets, "templates/layout.html", "templates/"+name+".html"))
	}
	return out
}

var funcs = template.FuncMap{
	"resources": wire.DescribeFree, // "gpu 1/2 free"
	"labels": func(l map[string]string) string { // "gpu-model=T4,zone=z1", "-" for none
		if len(l) == 0 {
			return "-"
		}
		return wire.LabelList(l)
	},
	"resourceTotals": wire.DescribeTotals, // "gpu 5/6 free"
	"ago": func(t time.Time) string {
		if t.IsZero() {
			return "-"
		}
		return duration(time.Since(t)) + " ago"
	},
	"when": func(t time.Time) string {
		if t.IsZero() {
			return "-"
		}
		return t.Local().Format("2006-01-02 15:04:05")
	},
	// lasted is how long an app or driver ran (or has run, if end is nil).
	"lasted": func(start time.Time, end *time.Time) string {
		if end == nil {
			return duration(time.Since(start))
		}
		return duration(end.Sub(start))
	},
	// contact is Raft's last contact ("67.852683ms", "0" on the leader,
	// "never") as people read it.
	"contact": func(s string) string {
		d, err := time.ParseDuration(s)
		if err != nil {
			return s
		}
		return duration(d)
	},
	// mixedVersions: masters that said their version do not all say the
	// same (an upgrade under way, or one forgotten).
	"mixedVersions": func(ms []wire.MasterNode) bool {
		seen := ""
		for _, m := range ms {
			if m.Version == "" {
				continue
			}
			if seen != "" && m.Version != seen {
				return true
			}
			seen = m.Version
		}
		return false
	},
	// ask is the confirmation of an action's button (see question).
	"ask": func(kind ActionKind, id string) string { return question(Action{Kind: kind, ID: id}, false) },
	"mb":  mb,
	// The queues page's and the queue of an app or a driver (queues.go).
	"amount":  amount,
	"limit":   limit,
	"percent": percent,
	"weight":  func(w float64) string { return strconv.FormatFloat(w, 'f', -1, 64) },
	"queueOf": queueOf,
	"intp": func(p *int) string {
		if p == nil {
			return "-"
		}
		return fmt.Sprint(*p)
	},
	"cores": func(n int) string {
		if n <= 0 {
			return "unlimited"
		}
		return fmt.Sprint(n)
	},
	"state": func(s any) string { return "state-" + strings.ToLower(fmt.Sprint(s)) },
	"color": color,
	"add":   func(a, b int) int { return a + b },
	"scale": func(n, unit int) int { return n * unit },
	"pct": func(part, whole int) int {
		if whole <= 0 {
			return 0
		}
		return part * 100 / whole
	},
	"live":  func(e wire.ExecutorStatus) bool { return !e.State.Finished() },
	"join":  strings.Join,
	"short": func(s string, n int) string { return shorten(s, n) },
	// "1 core", "2 cores": counts in sentences.
	"count": func(n int, one, many string) string {
		if n == 1 {
			return "1 " + one
		}
		return fmt.Sprintf("%d %s", n, many)
	},
	// An app's checks and restart policy (health.go).
	"check":   checkText,
	"restart": restartText,
}

func mb(mb int) string {
	if mb >= 1024 && mb%1024 == 0 {
		return fmt.Sprintf("%d GiB", mb/1024)
	}
	if mb >= 10240 {
		return fmt.Sprintf("%.1f GiB", float64(mb)/1024)
	}
	return fmt.Sprintf("%d MiB", mb)
}

func duration(d time.Duration) string {
	switch {
	case d < time.Second:
		return fmt.Sprintf("%d ms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%.1f s", d.Seconds())
	case d < time.Hour:
		return fmt.Sprintf("%d min %d s", int(d.Minutes()), int(d.Seconds())%60)
	case d < 48*time.Hour:
		return fmt.Sprintf("%d h %d min", int(d.Hours()), int(d.Minutes())%60)
	}
	return fmt.Sprintf("%d days", int(d.Hours()/24))
}

func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
