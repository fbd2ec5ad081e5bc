// Package config reads a berth binary's configuration file and gives its
// settings to the binary's flags.
//
// The file is TOML with one top-level key per flag, named as the flag:
// worker-timeout = "60s" for --worker-timeout. It is the lowest source
// but the defaults: a flag on the command line beats its environment
// variable, which beats the file, which beats the flag's default. Every
// key is checked, whether or not it is used: an unknown key, a key given
// twice, a value of the wrong type or one its flag cannot parse is
// refused naming the file, the line and the key, and so is a later
// refusal of a value the file set (Sources.Annotate).
package config

import (
	"errors"
	"fmt"
	"strings"

	toml "github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"

	"github.com/berth-cluster/berth/internal/regularfile"
)

// maxFileSize bounds a config file: a list of flags is a few KiB, and a
// mistaken path (a log, a device) must not be read whole.
const maxFileSize = 1 << 20

// File is a parsed configuration file.
type File struct {
	Path    string
	Entries []Entry // in the file's order
}

// Entry is one key of the file.
type Entry struct {
	Key   string
	Line  int
	Value any // as go-toml decodes it: string, int64, float64, bool, []any, ...
}

// Read parses the file at path. It checks the file's shape (TOML, flat,
// each key once), not its keys against any flags: that is Load's.
func Read(path string) (*File, error) {
	data, err := readBounded(path)
	if err != nil {
		return nil, fmt.Errorf("--config: %w", err)
	}
	f := &File{Path: path}
	// The parser's walk gives each key's line, which go-toml's decoder
	// does not keep; the decoder then gives the values, with TOML's own
	// checks (syntax, integer range, dates).
	seen := map[string]int{}
	var p unstable.Parser
	p.Reset(data)
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.Table, unstable.ArrayTable:
			key, line := keyOf(&p, e)
			return nil, fmt.Errorf("%s:%d: [%s]: the file has no sections: write each setting at the top, named as its flag", path, line, key)
		case unstable.KeyValue:
			key, line := keyOf(&p, e)
			if first, dup := seen[key]; dup {
				return nil, fmt.Errorf("%s:%d: key %s given twice (first on line %d)", path, line, key, first)
			}
			seen[key] = line
			f.Entries = append(f.Entries, Entry{Key: key, Line: line})
		}
	}
	var values map[string]any
	if err := toml.Unmarshal(data, &values); err != nil {
		var de *toml.DecodeError
		if errors.As(err, &de) {
			row, col := de.Position()
			return nil, fmt.Errorf("%s:%d:%d: %s", path, row, col, strings.TrimPrefix(de.Error(), "toml: "))
		}
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if err := p.Error(); err != nil { // the decoder accepted what the parser did not: not expected
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	for i, e := range f.Entries {
		f.Entries[i].Value = values[e.Key]
	}
	return f, nil
}

// keyOf is the (possibly dotted) key of a key-value or a table header, and
// the line it starts on.
func keyOf(p *unstable.Parser, e *unstable.Node) (string, int) {
	var parts []string
	line := 0
	it := e.Key()
	for it.Next() {
		n := it.Node()
		if line == 0 {
			line = p.Shape(n.Raw).Start.Line
		}
		parts = append(parts, string(n.Data))
	}
	return strings.Join(parts, "."), line
}

// readBounded reads at most maxFileSize bytes of a regular file (a FIFO
// given as --config hung the daemon in open).
func readBounded(path string) ([]byte, error) {
	data, err := regularfile.Read(path, maxFileSize)
	if err != nil && strings.Contains(err.Error(), "larger than") {
		return nil, fmt.Errorf("%s: larger than %d KiB: not a configuration file", path, maxFileSize>>10)
	}
	return data, err
}
