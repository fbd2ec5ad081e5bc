package main

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A data dir that holds another mode's state is named in a warning; one
// that holds its own, or nothing, is not.
func TestWarnUnusedState(t *testing.T) {
	for _, c := range []struct {
		mode, file string
		warn       string
	}{
		{"raft", "state.db", "single master's state"},
		{"none", "state.db", "single master's state"},
		{"bolt", "raft", "Raft cluster's state"},
		{"bolt", "state.db", ""},
		{"raft", "raft", ""},
		{"raft", "", ""},
	} {
		dir := t.TempDir()
		if c.file != "" {
			if err := os.WriteFile(filepath.Join(dir, c.file), nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		var buf bytes.Buffer
		warnUnusedState(dir, c.mode, slog.New(slog.NewTextHandler(&buf, nil)))
		if got := buf.String(); (c.warn == "") != (got == "") || !strings.Contains(got, c.warn) {
			t.Errorf("mode %s with %q: logged %q, want a warning saying %q", c.mode, c.file, got, c.warn)
		}
	}
}
