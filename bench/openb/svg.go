package openb

import (
	"fmt"
	"html"
	"io"
	"strings"
)

// palette colours the policies' curves in turn.
var palette = []string{"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac", "#2f4b7c", "#d45087"}

// WriteSVG draws each policy's mean curve (over its seeds): GPU allocation
// ratio against arrived demand, both in % of the cluster's GPUs.
func WriteSVG(w io.Writer, title string, policies []string, runs []*Run) error {
	const (
		width, height = 880, 520
		left, right   = 60, 200
		top, bottom   = 50, 50
		xMin, xMax    = 60.0, 135.0
		yMin, yMax    = 80.0, 100.0
	)
	px := func(x float64) float64 { return left + (x-xMin)/(xMax-xMin)*(width-left-right) }
	py := func(y float64) float64 { return top + (yMax-y)/(yMax-yMin)*(height-top-bottom) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n", width, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/><text x="%d" y="24" font-size="14">%s</text>`+"\n", left, html.EscapeString(title))
	for x := xMin; x <= xMax; x += 5 {
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#eee"/><text x="%.1f" y="%d" text-anchor="middle">%.0f</text>`+"\n", px(x), top, px(x), height-bottom, px(x), height-bottom+16, x)
	}
	for y := yMin; y <= yMax; y += 2 {
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#eee"/><text x="%d" y="%.1f" text-anchor="end">%.0f</text>`+"\n", left, py(y), width-right, py(y), left-6, py(y)+4, y)
	}
	fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">arrived GPU demand, %% of capacity</text>`+"\n", px((xMin+xMax)/2), height-12)
	fmt.Fprintf(&b, `<text x="16" y="%.1f" transform="rotate(-90 16 %.1f)" text-anchor="middle">GPUs allocated, %%</text>`+"\n", py((yMin+yMax)/2), py((yMin+yMax)/2))
	// The legend gives each policy's ratio at 100% arrived, marked here.
	fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#999" stroke-dasharray="4 3"/><text x="%.1f" y="%d" fill="#666">100%% arrived</text>`+"\n",
		px(100), top, px(100), height-bottom, px(100)+4, top+12)
	for k, p := range policies {
		mean := meanCurve(p, runs)
		if len(mean) == 0 {
			continue
		}
		colour := palette[k%len(palette)]
		var pts []string
		for x, y := range mean {
			if float64(x) >= xMin && y >= yMin {
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(float64(x)), py(y)))
			}
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="1.6" points="%s"/>`+"\n", colour, strings.Join(pts, " "))
		ly := top + 16*k
		fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="3"/><text x="%d" y="%d">%s %.1f%%</text>`+"\n",
			width-right+12, ly, width-right+32, ly, colour, width-right+38, ly+4, html.EscapeString(p), mean[min(100, len(mean)-1)])
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// meanCurve averages a policy's curves point by point, up to the furthest
// point any run reached; a run that stopped short counts with its final
// ratio (no task arrived after it).
func meanCurve(policy string, runs []*Run) []float64 {
	var mine []*Run
	longest := 0
	for _, r := range runs {
		if r.Policy == policy {
			mine = append(mine, r)
			longest = max(longest, len(r.Curve))
		}
	}
	mean := make([]float64, longest)
	for x := range mean {
		for _, r := range mine {
			mean[x] += r.At(x)
		}
		mean[x] /= float64(len(mine))
	}
	return mean
}
