package config

import (
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/urfave/cli/v2"
)

// Print writes the effective configuration as a file Load reads back:
// every flag with a key, its value, and where the value came from. The
// values of the secret and the token are never shown.
func (s *Sources) Print(w io.Writer, cx *cli.Context) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# The effective configuration of %s (%s --print-config): the command line,\n", s.program, s.program)
	fmt.Fprintf(&b, "# the environment, the --config file and the defaults, merged in that order.\n")
	fmt.Fprintf(&b, "# %s --config FILE reads it back.\n", s.program)
	for _, f := range s.flags {
		name := f.Names()[0]
		src := s.describe(name)
		if slices.Contains(sensitive, name) {
			if cx.String(name) == "" {
				fmt.Fprintf(&b, "# %s: not set (prefer secret-file: a file's value is readable by whoever reads the file)\n", name)
			} else {
				fmt.Fprintf(&b, "# %s: set (%s), not shown\n", name, src)
			}
			continue
		}
		line, err := keyValue(cx, f, name)
		if err != nil {
			fmt.Fprintf(&b, "# %s: %v (%s)\n", name, err, src)
			continue
		}
		fmt.Fprintf(&b, "%-44s # %s\n", line, src)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// describe says where a flag's value came from.
func (s *Sources) describe(name string) string {
	f, ok := s.from[name]
	switch {
	case !ok:
		return "default"
	case f.argv:
		return "--" + name
	case f.env != "":
		return "$" + f.env
	}
	return fmt.Sprintf("%s:%d", s.path, f.line)
}

// keyValue is the TOML line of a flag's effective value.
func keyValue(cx *cli.Context, f cli.Flag, name string) (string, error) {
	var v string
	switch f.(type) {
	case *cli.StringFlag, *cli.PathFlag:
		s := cx.String(name)
		if !utf8.ValidString(s) {
			return "", fmt.Errorf("not valid UTF-8, which TOML cannot hold")
		}
		v = quote(s)
	case *cli.GenericFlag:
		v = quote(fmt.Sprint(cx.Generic(name)))
	case *cli.DurationFlag:
		v = quote(cx.Duration(name).String())
	case *cli.IntFlag:
		v = strconv.Itoa(cx.Int(name))
	case *cli.Int64Flag:
		v = strconv.FormatInt(cx.Int64(name), 10)
	case *cli.UintFlag:
		v = strconv.FormatUint(uint64(cx.Uint(name)), 10)
	case *cli.Uint64Flag:
		v = strconv.FormatUint(cx.Uint64(name), 10)
	case *cli.Float64Flag:
		v = strconv.FormatFloat(cx.Float64(name), 'g', -1, 64)
		if !strings.ContainsAny(v, ".eEn") { // TOML's float needs a dot or an exponent
			v += ".0"
		}
	case *cli.BoolFlag:
		v = strconv.FormatBool(cx.Bool(name))
	case *cli.StringSliceFlag:
		items := make([]string, 0, len(cx.StringSlice(name)))
		for _, s := range cx.StringSlice(name) {
			if !utf8.ValidString(s) {
				return "", fmt.Errorf("not valid UTF-8, which TOML cannot hold")
			}
			items = append(items, quote(s))
		}
		v = "[" + strings.Join(items, ", ") + "]"
	default:
		return "", fmt.Errorf("flag of type %T has no key", f)
	}
	return bareKey(name) + " = " + v, nil
}

var bare = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

func bareKey(k string) string {
	if bare.MatchString(k) {
		return k
	}
	return quote(k)
}

// quote writes s as a TOML basic string: \" and \\ escaped, and every
// control character (TOML allows none raw but tab) as \uXXXX.
func quote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// Annotate adds to err, line by line, the file, line and key of each value
// from the file that the line names as its flag (--worker-timeout): the
// binaries check values after loading them and name the flag, and a
// value from a file must be found in the file.
func (s *Sources) Annotate(err error) error {
	if err == nil || s == nil || s.path == "" {
		return err
	}
	lines := strings.Split(err.Error(), "\n")
	changed := false
	for i, l := range lines {
		var where []string
		for _, f := range s.flags {
			name := f.Names()[0]
			if src, ok := s.from[name]; ok && src.line > 0 && namesFlag(l, name) {
				where = append(where, fmt.Sprintf("%s:%d: key %s", s.path, src.line, name))
			}
		}
		if len(where) > 0 {
			lines[i] = strings.Join(where, "; ") + ": " + l
			changed = true
		}
	}
	if !changed {
		return err
	}
	return &annotated{msg: strings.Join(lines, "\n"), err: err}
}

// namesFlag reports whether line names --name (not a longer flag's name).
func namesFlag(line, name string) bool {
	for rest := line; ; {
		i := strings.Index(rest, "--"+name)
		if i < 0 {
			return false
		}
		rest = rest[i+2+len(name):]
		if rest == "" || !isNameByte(rest[0]) {
			return true
		}
	}
}

func isNameByte(c byte) bool {
	return c == '-' || c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// annotated is an error with the file's places added; errors.As and
// errors.Is still see the original.
type annotated struct {
	msg string
	err error
}

func (a *annotated) Error() string { return a.msg }
func (a *annotated) Unwrap() error { return a.err }
