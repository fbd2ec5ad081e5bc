package ui

import (
	"fmt"
	"math"
	"testing"
)

// hsl reads back a colour of color().
func hsl(t *testing.T, c string) (hue, sat, light int) {
	t.Helper()
	if _, err := fmt.Sscanf(c, "hsl(%d,%d%%,%d%%)", &hue, &sat, &light); err != nil {
		t.Fatalf("colour %q: %v", c, err)
	}
	if hue < 0 || hue >= 360 || sat < 0 || sat > 100 || light < 0 || light > 100 {
		t.Fatalf("colour %q is out of range", c)
	}
	return hue, sat, light
}

// hueDistance is how far apart two hues are round the wheel.
func hueDistance(a, b int) int {
	d := int(math.Abs(float64(a - b)))
	return min(d, 360-d)
}

// Any 20 apps submitted one after another get 20 clearly distinct
// colours: hues at least 18° apart (360°/20, the most 20 hues can be),
// the next app's far round the wheel, and the nearest hues told apart by
// lightness as well. Two apps of a page had one colour (a hash of the
// id); the golden angle after it put apps 13 apart 12° apart.
func TestConsecutiveAppsGetDistinctColours(t *testing.T) {
	for _, first := range []int{0, 1, 7, 13, 480, 9990, 123456} {
		ids := make([]string, 20)
		for i := range ids {
			ids[i] = fmt.Sprintf("app-20261202003229-%04d", first+i)
		}
		for i := range ids {
			hi, si, li := hsl(t, color(ids[i]))
			for j := i + 1; j < len(ids); j++ {
				hj, sj, lj := hsl(t, color(ids[j]))
				d := hueDistance(hi, hj)
				if d < 18 {
					t.Errorf("%s %s and %s %s: hues %d° apart, want at least 18°", ids[i], color(ids[i]), ids[j], color(ids[j]), d)
				}
				if j == i+1 && d < 90 {
					t.Errorf("consecutive %s %s and %s %s: hues %d° apart, want at least 90°", ids[i], color(ids[i]), ids[j], color(ids[j]), d)
				}
				if j-i <= 8 && d < 36 {
					t.Errorf("%s %s and %s %s, %d apart: hues %d° apart, want at least 36°", ids[i], color(ids[i]), ids[j], color(ids[j]), j-i, d)
				}
				if d < 36 && li == lj && si == sj {
					t.Errorf("%s %s and %s %s: hues %d° apart and the same saturation and lightness", ids[i], color(ids[i]), ids[j], color(ids[j]), d)
				}
			}
		}
	}
	// Twenty apps on, the hue comes round again: the saturation differs.
	if a, b := color("app-20261202003229-0003"), color("app-20261202003229-0023"); a == b {
		t.Errorf("apps 3 and 23 both %s", a)
	}
	// An id without a counter is hashed, still a colour.
	hsl(t, color("imported-app"))
	if color("imported-app") != color("imported-app") {
		t.Error("a hashed colour changes")
	}
}
