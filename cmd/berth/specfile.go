package main

// Values given more than once, commands given as one string, and
// --file SPEC.json with the flags that override it: the plumbing of the
// run and submit flags (health.go, placeflags.go).

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/berth-cluster/berth/internal/regularfile"
	"github.com/berth-cluster/berth/wire"
)

// repeatedFlag is a flag that may be given more than once, each value
// kept whole: urfave's StringSliceFlag splits its values at commas, which
// a path or a command may hold. Its environment variable gives one value,
// which the command line's replace (as for the other flags).
func repeatedFlag(cmd, name, usage string) cli.Flag {
	return &repeatedGeneric{GenericFlag: cli.GenericFlag{Name: name, EnvVars: env(cmd, name), Usage: usage, Value: &repeated{}}}
}

type repeatedGeneric struct{ cli.GenericFlag }

// Apply registers the flag; what its environment variable gave so far is
// replaced by the first value on the command line.
func (f *repeatedGeneric) Apply(set *flag.FlagSet) error {
	err := f.GenericFlag.Apply(set)
	r := f.Value.(*repeated)
	r.fromEnv = len(r.values) > 0
	return err
}

type repeated struct {
	values  []string
	fromEnv bool
}

func (r *repeated) Set(v string) error {
	if r.fromEnv {
		r.values, r.fromEnv = nil, false
	}
	r.values = append(r.values, v)
	return nil
}

// String is empty: the help shows no default.
func (r *repeated) String() string { return "" }

// repeatedValues are the values of a repeatedFlag.
func repeatedValues(c *cli.Context, name string) []string {
	if r, ok := c.Generic(name).(*repeated); ok {
		return r.values
	}
	return nil
}

// splitCommand splits s into words as a POSIX shell splits a simple
// command, without its expansions: blanks part words; '...' keeps all it
// holds; "..." keeps all but \" \\ \$ \` (and \ newline, removed); a
// backslash outside quotes keeps the next character. No shell runs the
// command, so what a shell would act on unquoted (| & ; < > ( ) $ `) is
// refused rather than passed on as a word the user did not mean.
func splitCommand(s string) ([]string, error) {
	var words []string
	var word strings.Builder
	inWord := false
	end := func() {
		if inWord {
			words = append(words, word.String())
			word.Reset()
			inWord = false
		}
	}
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case ch == ' ' || ch == '\t' || ch == '\n':
			end()
		case ch == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, errors.New("a ' is not closed")
			}
			word.WriteString(s[i+1 : i+1+j])
			inWord, i = true, i+1+j
		case ch == '"':
			inWord = true
			closed := false
			for i++; i < len(s); i++ {
				ch := s[i]
				if ch == '"' {
					closed = true
					break
				}
				if ch == '$' || ch == '`' {
					return nil, unshelled(ch)
				}
				if ch == '\\' && i+1 < len(s) && strings.IndexByte("\"\\$`\n", s[i+1]) >= 0 {
					i++
					if s[i] != '\n' {
						word.WriteByte(s[i])
					}
					continue
				}
				word.WriteByte(ch)
			}
			if !closed {
				return nil, errors.New(`a " is not closed`)
			}
		case ch == '\\':
			if i+1 == len(s) {
				return nil, errors.New("a \\ ends it: nothing to escape")
			}
			i++
			if s[i] != '\n' {
				word.WriteByte(s[i])
				inWord = true
			}
		case strings.IndexByte("|&;<>()$`", ch) >= 0:
			return nil, unshelled(ch)
		default:
			word.WriteByte(ch)
			inWord = true
		}
	}
	end()
	if len(words) == 0 {
		return nil, errors.New("no command")
	}
	return words, nil
}

func unshelled(ch byte) error {
	return fmt.Errorf("%q unquoted: the worker runs the check's words, no shell; quote it, or run a shell yourself, e.g. 'sh -c \"...\"'", string(ch))
}

// readSpecFile decodes the --file flag's file ("-": standard input) into
// v as the master decodes a request's body: one JSON value, unknown
// fields refused. It returns the file's name, "" without --file.
func readSpecFile(c *cli.Context, v any) (string, error) {
	name := c.String("file")
	if name == "" {
		return "", nil
	}
	var data []byte
	var err error
	if name == "-" {
		in := c.App.Reader
		if in == nil {
			in = os.Stdin
		}
		data, err = io.ReadAll(io.LimitReader(in, wire.MaxBodyBytes+1))
	} else {
		data, err = regularfile.Read(name, wire.MaxBodyBytes) // not /dev/zero, nor a FIFO
	}
	if err != nil {
		return name, fmt.Errorf("--file: %w", err)
	}
	if len(data) > wire.MaxBodyBytes {
		return name, fmt.Errorf("--file %s: larger than %d bytes, the most the master takes", name, wire.MaxBodyBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		if errors.Is(err, io.EOF) {
			return name, fmt.Errorf("--file %s: empty, want a JSON object", name)
		}
		offset := dec.InputOffset()
		var syntax *json.SyntaxError
		var typ *json.UnmarshalTypeError
		if errors.As(err, &syntax) {
			offset = syntax.Offset
		} else if errors.As(err, &typ) {
			offset = typ.Offset
		} else if at := unknownFieldAt(data[:min(int(offset), len(data))], err); at >= 0 {
			offset = int64(at) // the decoder stopped at the object's end: point at the field
		}
		line := 1 + bytes.Count(data[:min(int(offset), len(data))], []byte("\n"))
		return name, fmt.Errorf("--file %s: line %d: %s", name, line, strings.TrimPrefix(err.Error(), "json: "))
	}
	if dec.More() {
		return name, fmt.Errorf("--file %s: data after the JSON object", name)
	}
	return name, nil
}

// unknownField is the name in encoding/json's error for a field the
// target does not have.
var unknownField = regexp.MustCompile(`^json: unknown field "(.*)"$`)

// unknownFieldAt is the offset in data of the key that err names as
// unknown (the last one before where the decoder stopped), -1 if err is
// not that error or the key is not found.
func unknownFieldAt(data []byte, err error) int {
	m := unknownField.FindStringSubmatch(err.Error())
	if m == nil {
		return -1
	}
	key := regexp.MustCompile(regexp.QuoteMeta(strconv.Quote(m[1])) + `\s*:`)
	all := key.FindAllIndex(data, -1)
	if len(all) == 0 {
		return -1
	}
	return all[len(all)-1][0]
}

// overrideFrom sets *field from flag name, read by read, when the flag
// was given or *field is still unset (zero): a flag given overrides
// --file, and a flag's default fills what the file leaves out.
func overrideFrom[T comparable](c *cli.Context, name string, field *T, read func(string) T) {
	var zero T
	if c.IsSet(name) || *field == zero {
		*field = read(name)
	}
}

// mergeMap adds the flag's entries to the file's (a flag's entry wins).
func mergeMap[M ~map[K]V, K comparable, V any](file, flags M) M {
	if len(flags) == 0 {
		return file
	}
	if file == nil {
		return flags
	}
	for k, v := range flags {
		file[k] = v
	}
	return file
}
