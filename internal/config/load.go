package config

import (
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"
)

// Flag is --config, read from env too.
func Flag(env string) cli.Flag {
	return &cli.StringFlag{Name: "config", EnvVars: []string{env},
		Usage: "a TOML `FILE` of settings, each named as its flag (log-level = \"debug\" for --log-level debug); the command line and the environment beat it"}
}

// PrintFlag is --print-config.
func PrintFlag() cli.Flag {
	return &cli.BoolFlag{Name: "print-config",
		Usage: "print the effective configuration (command line, environment, --config file and defaults, merged) as a file --config loads, and exit"}
}

// meta are the flags that say how to run rather than what: no key names
// them (a file naming another file would be a chain to follow; a file
// saying recover would recover at every start).
var meta = []string{"config", "print-config", "version", "help", "recover"}

// sensitive are the flags whose values --print-config never shows.
var sensitive = []string{"secret", "token"}

// Sources is where each flag of an app got its value.
type Sources struct {
	program string
	path    string          // the --config file, "" for none
	flags   []cli.Flag      // the flags a key may name, in the app's order
	from    map[string]from // flag name → its value's source
}

// from is one value's source: exactly one of its fields is set, or none
// for the default.
type from struct {
	argv bool
	env  string
	line int // in the file
}

// Load reads the file --config names, if any, and sets each flag the file
// gives that neither the command line nor the environment set. Every key
// is checked, used or not. args are the command line the app ran with,
// only to tell it from the environment when printing the sources (nil:
// such a flag is said to come from the environment).
func Load(cx *cli.Context, args []string) (*Sources, error) {
	s := &Sources{program: cx.App.Name, path: cx.String("config"), from: map[string]from{}}
	onArgv := argvFlags(cx.App.Flags, args)
	for _, f := range cx.App.Flags {
		name := f.Names()[0]
		if slices.Contains(meta, name) {
			continue
		}
		s.flags = append(s.flags, f)
		switch {
		case onArgv[name]:
			s.from[name] = from{argv: true}
		case cx.IsSet(name):
			s.from[name] = from{env: envOf(f)}
		}
	}
	if s.path == "" {
		return s, nil
	}
	file, err := Read(s.path)
	if err != nil {
		return nil, err
	}
	for _, e := range file.Entries {
		f := s.flag(e.Key)
		if f == nil {
			return nil, s.unknown(e)
		}
		values, err := flagValues(f, e.Value)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: key %s: %w", s.path, e.Line, e.Key, err)
		}
		if _, set := s.from[e.Key]; set {
			continue // the command line or the environment wins
		}
		for _, v := range values {
			if err := cx.Set(e.Key, v); err != nil {
				return nil, fmt.Errorf("%s:%d: key %s: %q: %w", s.path, e.Line, e.Key, v, err)
			}
		}
		s.from[e.Key] = from{line: e.Line}
	}
	return s, nil
}

func (s *Sources) flag(name string) cli.Flag {
	for _, f := range s.flags {
		if slices.Contains(f.Names(), name) {
			return f
		}
	}
	return nil
}

// unknown is the error for a key no flag has, with the closest flag name
// when it looks like a typo of one.
func (s *Sources) unknown(e Entry) error {
	if slices.Contains(meta, e.Key) {
		return fmt.Errorf("%s:%d: key %s: not a setting of a file (give --%s on the command line)", s.path, e.Line, e.Key, e.Key)
	}
	msg := fmt.Sprintf("%s:%d: unknown key %q: %s has no flag --%s", s.path, e.Line, e.Key, s.program, e.Key)
	best, bestDist := "", 3 // at most two edits away
	for _, f := range s.flags {
		if d := editDistance(e.Key, f.Names()[0]); d < bestDist {
			best, bestDist = f.Names()[0], d
		}
	}
	if best != "" {
		msg += fmt.Sprintf(" (did you mean %s?)", best)
	}
	return fmt.Errorf("%s", msg)
}

// flagValues checks a file's value against its flag's type and turns it
// into what the flag parses: a TOML string for a string or a duration
// (parsed here, for a clear error), an integer for an integer, a boolean
// for a boolean, an array of strings for a repeatable flag (one value per
// element). No other conversion: port = "7077" is refused.
func flagValues(f cli.Flag, v any) ([]string, error) {
	switch f.(type) {
	case *cli.StringFlag, *cli.PathFlag, *cli.GenericFlag:
		// A text flag whose values are often numbers takes an integer too
		// (cores = 16 for --cores, which is text so that unset means "the
		// machine's"); the binary checks the value as it does the flag's.
		switch s := v.(type) {
		case string:
			return []string{s}, nil
		case int64:
			return []string{strconv.FormatInt(s, 10)}, nil
		}
		return nil, wantGot("a string", v)
	case *cli.DurationFlag:
		s, ok := v.(string)
		if !ok {
			return nil, wantGot(`a duration as a string, such as "90s" or "10m"`, v)
		}
		if _, err := time.ParseDuration(s); err != nil {
			return nil, fmt.Errorf("%q is not a duration, such as \"90s\" or \"10m\"", s)
		}
		return []string{s}, nil
	case *cli.IntFlag, *cli.Int64Flag:
		n, ok := v.(int64)
		if !ok {
			return nil, wantGot("an integer", v)
		}
		if _, isInt := f.(*cli.IntFlag); isInt && (n > math.MaxInt || n < math.MinInt) {
			return nil, fmt.Errorf("%d is out of range", n)
		}
		return []string{strconv.FormatInt(n, 10)}, nil
	case *cli.UintFlag, *cli.Uint64Flag:
		n, ok := v.(int64)
		if !ok {
			return nil, wantGot("a non-negative integer", v)
		}
		if n < 0 {
			return nil, fmt.Errorf("%d: want a non-negative integer", n)
		}
		return []string{strconv.FormatInt(n, 10)}, nil
	case *cli.Float64Flag:
		switch n := v.(type) {
		case float64:
			return []string{strconv.FormatFloat(n, 'g', -1, 64)}, nil
		case int64:
			return []string{strconv.FormatInt(n, 10)}, nil
		}
		return nil, wantGot("a number", v)
	case *cli.BoolFlag:
		b, ok := v.(bool)
		if !ok {
			return nil, wantGot("true or false", v)
		}
		return []string{strconv.FormatBool(b)}, nil
	case *cli.StringSliceFlag:
		list, ok := v.([]any)
		if !ok {
			return nil, wantGot(`an array of strings, such as ["a", "b"]`, v)
		}
		out := make([]string, len(list))
		for i, item := range list {
			s, ok := item.(string)
			if !ok {
				return nil, fmt.Errorf("element %d: %w", i+1, wantGot("a string", item))
			}
			out[i] = s
		}
		return out, nil
	}
	// A flag type this package does not know is a programming error, which
	// the tests of each binary's --print-config would show.
	return nil, fmt.Errorf("flag of type %T cannot be set from a file", f)
}

func wantGot(want string, v any) error {
	return fmt.Errorf("want %s, not %s", want, tomlType(v))
}

// tomlType names a decoded value's TOML type, as a user wrote it.
func tomlType(v any) string {
	switch v := v.(type) {
	case string:
		return fmt.Sprintf("the string %q", v)
	case int64:
		return fmt.Sprintf("the integer %d", v)
	case float64:
		return fmt.Sprintf("the float %v", v)
	case bool:
		return fmt.Sprintf("the boolean %v", v)
	case []any:
		return "an array"
	case map[string]any:
		return "a table"
	}
	return "a date or time"
}

// envOf is the environment variable that set f (its first one present).
func envOf(f cli.Flag) string {
	if d, ok := f.(cli.DocGenerationFlag); ok {
		for _, name := range d.GetEnvVars() {
			if _, found := os.LookupEnv(name); found {
				return name
			}
		}
	}
	return "the environment"
}

// argvFlags are the app's flags given in args, read as Go's flag package
// reads them: -name or --name, with =value or (except booleans) the next
// argument as the value, up to "--" or the first argument that is not a
// flag (a subcommand).
func argvFlags(flags []cli.Flag, args []string) map[string]bool {
	byName := map[string]cli.Flag{}
	for _, f := range flags {
		for _, n := range f.Names() {
			byName[n] = f
		}
	}
	set := map[string]bool{}
	for i := 1; i < len(args); i++ {
		a := args[i]
		if a == "--" || a == "-" || !strings.HasPrefix(a, "-") {
			break
		}
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		f, ok := byName[name]
		if !ok {
			continue
		}
		set[f.Names()[0]] = true
		if _, isBool := f.(*cli.BoolFlag); !isBool && !hasValue {
			i++ // its value
		}
	}
	return set
}

// editDistance is Levenshtein's distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
