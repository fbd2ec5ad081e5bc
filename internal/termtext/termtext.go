// Package termtext makes text that users and processes supply (app names,
// messages, commands, server errors) safe to print on an operator's
// terminal, and tells the master which names to refuse.
//
// A terminal acts on what it is sent: an ESC or C1 control starts a
// sequence that can retitle or clear the screen, move the cursor over lines
// already printed, or forge output; a bidirectional override or isolate
// reorders what the operator reads. Such characters are shown escaped,
// strconv.Quote-like but without the quotes: ESC is \x1b, U+009B is \u009b,
// U+202E is \u202e, a byte of invalid UTF-8 is \xff. Everything else,
// é, 漢 or an emoji included, is kept as it is, and so is a backslash:
// servers' messages already quote what they echo with %q, and doubling its
// backslashes would garble them, while a literal "\x1b" does a terminal no
// harm.
package termtext

import "unicode/utf8"

// Unsafe reports whether r is acted on by a terminal, or reorders text,
// rather than shown: the C0 controls, DEL, the C1 controls
// (U+0080-U+009F), and the bidirectional embeddings, overrides and
// isolates (U+202A-U+202E, U+2066-U+2069; the "Trojan Source" set,
// CVE-2021-42574).
func Unsafe(r rune) bool {
	return r < 0x20 || r == 0x7f || r >= 0x80 && r <= 0x9f ||
		r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069
}

// Safe reports whether s prints on a terminal as it is: valid UTF-8
// without an Unsafe character. Escape(s) == s exactly when Safe(s).
func Safe(s string) bool {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 || Unsafe(r) {
			return false
		}
		i += size
	}
	return true
}

// Escape returns s with every Unsafe character and every byte of invalid
// UTF-8 replaced by its escaped form: \a \b \t \n \v \f \r for those
// controls, \xHH for the other C0 controls, DEL and invalid bytes, \uHHHH
// for the C1 controls and the bidirectional formatting characters.
func Escape[S ~string](s S) string {
	str := string(s)
	if Safe(str) {
		return str
	}
	out := make([]byte, 0, len(str)+16)
	for i := 0; i < len(str); {
		r, size := utf8.DecodeRuneInString(str[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			out = appendHex(out, `\x`, uint32(str[i]), 2)
		case Unsafe(r):
			out = appendEscaped(out, r)
		default:
			out = append(out, str[i:i+size]...)
		}
		i += size
	}
	return string(out)
}

// EscapeJSON returns JSON as encoding/json writes it with what it leaves
// raw escaped: DEL, the C1 controls and the bidirectional formatting
// characters become \u007f, \u009b, \u202e... These can only stand inside
// strings, where the escape decodes to the same character, so a program
// reading the JSON sees no difference. Tab, newline and carriage return are
// kept: encoding/json escapes them in strings already, and outside strings
// they are the indentation. Invalid UTF-8, which encoding/json never
// writes, becomes \ufffd as encoding/json itself would make it.
func EscapeJSON(js []byte) []byte {
	var out []byte // allocated at the first character to escape
	for i := 0; i < len(js); {
		r, size := utf8.DecodeRune(js[i:])
		invalid := r == utf8.RuneError && size == 1
		if (invalid || Unsafe(r)) && r != '\t' && r != '\n' && r != '\r' {
			if out == nil {
				out = append(make([]byte, 0, len(js)+16), js[:i]...)
			}
			out = appendHex(out, `\u`, uint32(r), 4) // RuneError is U+FFFD
		} else if out != nil {
			out = append(out, js[i:i+size]...)
		}
		i += size
	}
	if out == nil {
		return js
	}
	return out
}

// shortEscapes are the controls with a one-letter escape, as in Go.
var shortEscapes = map[rune]string{
	'\a': `\a`, '\b': `\b`, '\t': `\t`, '\n': `\n`, '\v': `\v`, '\f': `\f`, '\r': `\r`,
}

func appendEscaped(dst []byte, r rune) []byte {
	switch {
	case shortEscapes[r] != "":
		return append(dst, shortEscapes[r]...)
	case r < 0x80: // C0 and DEL: one byte
		return appendHex(dst, `\x`, uint32(r), 2)
	}
	return appendHex(dst, `\u`, uint32(r), 4)
}

// appendHex appends prefix and v in lowercase hex, digits wide.
func appendHex(dst []byte, prefix string, v uint32, digits int) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, prefix...)
	for shift := 4 * (digits - 1); shift >= 0; shift -= 4 {
		dst = append(dst, hex[v>>uint(shift)&0xf])
	}
	return dst
}
