// Package units parses the sizes people type on command lines.
package units

import (
	"fmt"
	"strconv"
	"strings"
)

// ParseMemoryMB parses a memory size in Spark's notation into MiB: a number
// with an optional suffix k, m, g or t (case-insensitive, an optional "b" or
// "ib" after it); a bare number is MiB. "2g" is 2048, "256m" is 256, "512" is
// 512, "1.5g" is 1536. The result must be at least 1 MiB.
func ParseMemoryMB(s string) (int, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	t = strings.TrimSuffix(strings.TrimSuffix(t, "ib"), "b")
	scale := 1.0 // MiB
	if n := len(t); n > 0 {
		switch t[n-1] {
		case 'k':
			scale, t = 1.0/1024, t[:n-1]
		case 'm':
			t = t[:n-1]
		case 'g':
			scale, t = 1024, t[:n-1]
		case 't':
			scale, t = 1024*1024, t[:n-1]
		}
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || v != v || v <= 0 {
		return 0, fmt.Errorf("%q is not a memory size (examples: 512m, 2g, 1.5g)", s)
	}
	mb := v * scale
	if mb < 1 {
		return 0, fmt.Errorf("%q is less than 1 MiB", s)
	}
	if mb > 1<<40 {
		return 0, fmt.Errorf("%q is too large", s)
	}
	return int(mb), nil
}
