package logging

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
)

func TestNewRejectsBadLevelAndFormat(t *testing.T) {
	if _, err := New(&bytes.Buffer{}, "loud", "text"); err == nil {
		t.Error("level loud accepted")
	}
	if _, err := New(&bytes.Buffer{}, "info", "xml"); err == nil {
		t.Error("format xml accepted")
	}
}

// Raft's hclog lines land in slog with their level, component and fields,
// and the slog level filters them.
func TestHCLogBridge(t *testing.T) {
	var buf bytes.Buffer
	l, err := New(&buf, "info", "json")
	if err != nil {
		t.Fatal(err)
	}
	h := HCLog(l, "raft").Named("transport").With("peer", "m2")
	h.Debug("hidden")
	h.Info("entering follower state", "term", 3)
	h.Warn("heartbeat timeout reached")
	if h.IsDebug() || !h.IsInfo() || h.GetLevel() != hclog.Info {
		t.Errorf("levels: debug %v info %v level %v", h.IsDebug(), h.IsInfo(), h.GetLevel())
	}
	h.StandardLogger(nil).Print("from the standard logger")
	var lines []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("not JSON: %q", line)
		}
		if n := strings.Count(line, `"component"`); n != 1 {
			t.Errorf("component given %d times: %s", n, line)
		}
		lines = append(lines, m)
	}
	if len(lines) != 3 {
		t.Fatalf("%d lines, want 3 (debug filtered): %s", len(lines), buf.String())
	}
	first := lines[0]
	if first["msg"] != "entering follower state" || first["level"] != "INFO" || first["component"] != "raft.transport" || first["peer"] != "m2" || first["term"] != 3.0 {
		t.Errorf("first line %v", first)
	}
	if lines[1]["level"] != "WARN" || lines[2]["msg"] != "from the standard logger" {
		t.Errorf("lines %v", lines[1:])
	}
}

// hclog.Fmt values (Raft's "initial configuration" servers) are formatted,
// not printed as a format and its arguments.
func TestHCLogBridgeFormatsFmt(t *testing.T) {
	var buf bytes.Buffer
	l, err := New(&buf, "info", "text")
	if err != nil {
		t.Fatal(err)
	}
	args := []any{"servers", hclog.Fmt("%+v", []struct{ ID string }{{"m1"}})}
	HCLog(l, "raft").Info("initial configuration", args...)
	if out := buf.String(); !strings.Contains(out, `servers=[{ID:m1}]`) || strings.Contains(out, "%+v") {
		t.Errorf("logged %q", out)
	}
	if _, still := args[1].(hclog.Format); !still {
		t.Error("the caller's arguments were changed")
	}
}
