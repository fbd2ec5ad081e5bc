package load

import (
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
)

// writeJSON writes the whole report to path (--json).
func writeJSON(path string, r *Report) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}

// writeCSV writes the first table to path and each other one next to it,
// named <path without .csv>-<table name>.csv.
func writeCSV(path string, tables []table) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	for i, t := range tables {
		p := path
		if i > 0 {
			p = strings.TrimSuffix(path, ".csv") + "-" + t.Name + ".csv"
		}
		f, err := os.Create(p)
		if err != nil {
			return err
		}
		cw := csv.NewWriter(f)
		_ = cw.Write(t.Header)
		_ = cw.WriteAll(t.Rows)
		cw.Flush()
		if err := cw.Error(); err != nil {
			f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
	}
	return nil
}
