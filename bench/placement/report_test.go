package placement

import (
	"bytes"
	"encoding/csv"
	"encoding/xml"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

func seedResults(t *testing.T) []*Result {
	t.Helper()
	rcs, err := runConfigs("spread,pack,bestfit@4", "1,2,4,8", 4)
	if err != nil {
		t.Fatal(err)
	}
	results, err := runAll(SeedTrace(), rcs)
	if err != nil {
		t.Fatal(err)
	}
	return results
}

func TestRunConfigs(t *testing.T) {
	rcs, err := runConfigs("spread,pack,bestfit@4", "1,2,4,8", 4)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, rc := range rcs {
		names = append(names, rc.Name())
	}
	want := "spread-u1 spread-u2 spread-u4 spread-u8 pack-u1 pack-u2 pack-u4 pack-u8 bestfit-u4"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("rows = %q, want %q", got, want)
	}
	for _, bad := range [][2]string{{"spread", "0"}, {"spread", "x"}, {"bestfit@", "4"}, {"", "4"}, {"spread", ""}} {
		if _, err := runConfigs(bad[0], bad[1], 4); err == nil {
			t.Errorf("runConfigs(%q, %q): no error", bad[0], bad[1])
		}
	}
	if _, err := Run(SeedTrace(), RunConfig{Policy: "nosuch", Unit: 1, RefUnit: 4}); err == nil {
		t.Error("unknown policy: no error")
	}
}

func TestCSVOneRowPerPolicy(t *testing.T) {
	results := seedResults(t)
	var b bytes.Buffer
	if err := writeCSV(&b, "seed", "", 4, results); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1+len(results) {
		t.Fatalf("%d rows, want header + %d", len(rows), len(results))
	}
	header := strings.Join(rows[0], ",")
	for _, col := range []string{"policy", "unit", "exec_ratio", "small_share", "stranded_cores", "blast_mean", "blast_p95", "waiting_cores", "round_us_mean", "round_us_p99", "size_1", "size_32_plus"} {
		if !strings.Contains(","+header+",", ","+col+",") {
			t.Errorf("header %q lacks %q", header, col)
		}
	}
	for i, r := range results {
		row := rows[i+1]
		if len(row) != len(rows[0]) {
			t.Fatalf("row %d has %d fields, header %d", i+1, len(row), len(rows[0]))
		}
		if row[2]+"-u"+row[3] != r.Name {
			t.Errorf("row %d is %s-u%s, want %s", i+1, row[2], row[3], r.Name)
		}
	}
}

// decodeAll reads every token of an XML document, failing on malformed XML.
func decodeAll(t *testing.T, data []byte) (elements map[string]int, texts []string) {
	t.Helper()
	elements = map[string]int{}
	d := xml.NewDecoder(bytes.NewReader(data))
	d.Strict = true
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			return elements, texts
		}
		if err != nil {
			t.Fatalf("SVG is not well-formed XML: %v", err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			elements[tok.Name.Local]++
		case xml.CharData:
			if s := strings.TrimSpace(string(tok)); s != "" {
				texts = append(texts, s)
			}
		}
	}
}

func TestSVGWellFormed(t *testing.T) {
	results := seedResults(t)
	var b bytes.Buffer
	if err := writeSVG(&b, "sizes <&> \"quoted\"", "sub", results); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		XMLName xml.Name `xml:"svg"`
		Width   int      `xml:"width,attr"`
	}
	if err := xml.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatalf("xml.Unmarshal: %v", err)
	}
	if doc.Width <= 0 {
		t.Errorf("width = %d", doc.Width)
	}
	elements, texts := decodeAll(t, b.Bytes())
	joined := strings.Join(texts, "\n")
	for _, r := range results {
		if !strings.Contains(joined, r.Name) {
			t.Errorf("no label %s in the chart", r.Name)
		}
	}
	for _, bk := range sizeBuckets {
		if !strings.Contains(joined, bk.Label) {
			t.Errorf("legend lacks bucket %s", bk.Label)
		}
	}
	if !strings.Contains(joined, `sizes <&> "quoted"`) {
		t.Error("title not escaped and decoded back")
	}
	if elements["rect"] < len(results) {
		t.Errorf("%d rects for %d policies", elements["rect"], len(results))
	}
}

func TestTableAndSnapshots(t *testing.T) {
	results := seedResults(t)
	var b bytes.Buffer
	if err := writeTable(&b, results, 4); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	if len(lines) != 1+len(results) {
		t.Fatalf("table has %d lines, want %d:\n%s", len(lines), 1+len(results), b.String())
	}
	if !strings.Contains(lines[0], "small<4c") {
		t.Errorf("header %q lacks the reference unit", lines[0])
	}
	b.Reset()
	if err := writeSnapshots(&b, results); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"initial placement", "after worker loss (w1)", "after master loss", "w1:6 w2:6", "w1:8 w2:4", "lost w1:12"} {
		if !strings.Contains(out, want) {
			t.Errorf("snapshots lack %q:\n%s", want, out)
		}
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.TrimRight(line, " ") != line {
			t.Errorf("trailing spaces in %q", line)
		}
	}
}

func TestCommandSeedTrace(t *testing.T) {
	dir := t.TempDir()
	csvPath, svgPath := filepath.Join(dir, "sub", "seed.csv"), filepath.Join(dir, "seed.svg")
	var out bytes.Buffer
	err := runPlacement(&out, "--trace", "seed", "--csv", csvPath, "--svg", svgPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"spread-u1", "bestfit-u4", "exec/min", "initial placement", "wrote " + csvPath} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	for _, p := range []string{csvPath, svgPath} {
		if st, err := os.Stat(p); err != nil || st.Size() == 0 {
			t.Errorf("%s not written: %v", p, err)
		}
	}
}

// runPlacement runs berthbench placement with args, its output to out.
func runPlacement(out io.Writer, args ...string) error {
	app := &cli.App{Name: "berthbench", Writer: out, Commands: Commands(out)}
	return app.Run(append([]string{"berthbench", "placement"}, args...))
}

func TestCommandEnvAndErrors(t *testing.T) {
	// berthbench's variable, and placebench's, which scripts may still set.
	for _, name := range []string{"BERTHBENCH_PLACEMENT_POLICIES", "BERTH_PLACEBENCH_POLICIES"} {
		t.Run(name, func(t *testing.T) {
			t.Setenv(name, "pack@2")
			var out bytes.Buffer
			if err := runPlacement(&out, "--trace", "seed", "--csv", "", "--svg", ""); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(out.String(), "pack-u2") || strings.Contains(out.String(), "spread-u1") {
				t.Errorf("%s not honoured:\n%s", name, out.String())
			}
			if strings.Contains(out.String(), "wrote") {
				t.Errorf("empty --csv/--svg still wrote files:\n%s", out.String())
			}
		})
	}
	for _, args := range [][]string{
		{"--trace", "nosuch"},
		{"--ref-unit", "0"},
		{"--policies", "nosuch"},
		{"--workers", "0", "--csv", "", "--svg", ""},
	} {
		if err := runPlacement(io.Discard, args...); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
}

func TestBalanceScores(t *testing.T) {
	best := &Result{Metrics: Metrics{ExecRatio: 1, SmallShare: 0, StrandedPct: 0, BlastMean: 0.25, WaitingCores: 0}}
	worse := &Result{Metrics: Metrics{ExecRatio: 2, SmallShare: 0.01, StrandedPct: 1, BlastMean: 0.5, WaitingCores: 1}}
	got := balanceScores([]*Result{best, worse})
	if got[0] != 1 {
		t.Errorf("best on every metric: score %v, want 1", got[0])
	}
	// Every ratio is 2 (small share and stranded with their +1 floors).
	if math.Abs(got[1]-2) > 1e-9 {
		t.Errorf("twice as bad on every metric: score %v, want 2", got[1])
	}
}
