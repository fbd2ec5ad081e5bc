package placement

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
)

// bucketColors run from red (1-core executors, the fragmentation) to blue
// (32+ cores); textOnDark says which need white labels.
var (
	bucketColors = [len(sizeBuckets)]string{"#b2182b", "#ef8a62", "#fddbc7", "#d1e5f0", "#67a9cf", "#2166ac"}
	textOnDark   = [len(sizeBuckets)]bool{true, false, false, false, false, true}
)

// writeSVG draws one stacked horizontal bar per result: the share of
// executor-rounds of apps without CoresPerExecutor in each size bucket.
func writeSVG(w io.Writer, title, subtitle string, results []*Result) error {
	const (
		width    = 960
		left     = 130 // room for the row labels
		right    = 30
		top      = 104 // title, subtitle, legend
		barH     = 24
		gap      = 10
		bottom   = 64 // axis ticks and label
		fontFace = "font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\""
	)
	plotW := float64(width - left - right)
	height := top + len(results)*(barH+gap) + bottom

	var b bytes.Buffer
	fmt.Fprintf(&b, `<?xml version="1.0" encoding="UTF-8"?>`+"\n")
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" %s font-size="13">`+"\n",
		width, height, width, height, fontFace)
	fmt.Fprintf(&b, `<rect x="0" y="0" width="%d" height="%d" fill="#ffffff"/>`+"\n", width, height)
	fmt.Fprintf(&b, `<text x="%d" y="26" font-size="18" font-weight="bold">%s</text>`+"\n", left, esc(title))
	fmt.Fprintf(&b, `<text x="%d" y="46" font-size="12" fill="#444444">%s</text>`+"\n", left, esc(subtitle))

	// Legend.
	lx := float64(left)
	fmt.Fprintf(&b, `<text x="%.1f" y="79" font-size="12" fill="#444444">executor cores:</text>`+"\n", lx)
	lx += 100
	for i, bk := range sizeBuckets {
		fmt.Fprintf(&b, `<rect x="%.1f" y="67" width="16" height="16" fill="%s" stroke="#555555" stroke-width="0.5"/>`+"\n", lx, bucketColors[i])
		fmt.Fprintf(&b, `<text x="%.1f" y="80">%s</text>`+"\n", lx+21, esc(bk.Label))
		lx += 92
	}

	// Grid and x axis.
	axisY := top + len(results)*(barH+gap)
	for t := 0; t <= 100; t += 25 {
		x := float64(left) + plotW*float64(t)/100
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#cccccc" stroke-width="1"/>`+"\n", x, top-6, x, axisY)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%d%%</text>`+"\n", x, axisY+18, t)
	}
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#333333" stroke-width="1"/>`+"\n", left, axisY, width-right, axisY)
	fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle" fill="#333333">share of executor-rounds (executors of apps without CoresPerExecutor, sampled after every round)</text>`+"\n",
		float64(left)+plotW/2, axisY+44)
	midY := float64(top+axisY) / 2
	fmt.Fprintf(&b, `<text x="18" y="%.1f" text-anchor="middle" transform="rotate(-90 18 %.1f)" fill="#333333">policy and minimum core unit</text>`+"\n", midY, midY)

	// Bars.
	for row, res := range results {
		y := top + row*(barH+gap)
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end" font-weight="bold">%s</text>`+"\n", left-8, y+barH/2+5, esc(res.Name))
		x := float64(left)
		for i, share := range res.Metrics.SizeShare {
			if share <= 0 {
				continue
			}
			segW := plotW * share
			fmt.Fprintf(&b, `<rect x="%.2f" y="%d" width="%.2f" height="%d" fill="%s"><title>%s: %s cores, %.1f%%</title></rect>`+"\n",
				x, y, segW, barH, bucketColors[i], esc(res.Name), esc(sizeBuckets[i].Label), 100*share)
			if segW >= 34 {
				fill := "#111111"
				if textOnDark[i] {
					fill = "#ffffff"
				}
				fmt.Fprintf(&b, `<text x="%.2f" y="%d" text-anchor="middle" font-size="11" fill="%s">%.0f%%</text>`+"\n",
					x+segW/2, y+barH/2+4, fill, 100*share)
			}
			x += segW
		}
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%.2f" height="%d" fill="none" stroke="#555555" stroke-width="0.6"/>`+"\n", left, y, plotW, barH)
	}
	b.WriteString("</svg>\n")
	_, err := w.Write(b.Bytes())
	return err
}

func esc(s string) string {
	var b bytes.Buffer
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}
