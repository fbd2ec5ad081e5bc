package wire

import (
	"fmt"
	"unicode/utf8"
)

// What an answer, an error or the audit log repeats of a caller's input is
// cut to a small size, so that a megabyte sent is not a megabyte stored
// (the audit log), echoed (a 400) or printed. The cut says how much went.

// MaxEchoBytes bounds what one value of an error message repeats of the
// input; MaxAuditText what one field of an audit entry keeps.
const (
	MaxEchoBytes = 160
	MaxAuditText = 128
)

// Clip returns s if it has at most n bytes, else its head and tail with
// the middle cut, saying how many bytes went: "aaaa…(1048320 bytes cut)…aaaa".
// The cut falls on rune boundaries; the result has at most n bytes plus
// the marker's (about 25).
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	head, start := n/2, len(s)-(n-n/2)
	for head > 0 && !utf8.RuneStart(s[head]) {
		head--
	}
	for start < len(s) && !utf8.RuneStart(s[start]) {
		start++
	}
	h, t := s[:head], s[start:]
	return fmt.Sprintf("%s…(%d bytes cut)…%s", h, len(s)-len(h)-len(t), t)
}
