package load

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"

	"github.com/berth-cluster/berth/bench/internal/benchstat"
)

// Machine is where the figures were taken.
type Machine = benchstat.Host

func machine() Machine { return benchstat.DescribeHost() }

// MasterInfo says which master was measured and how it ran.
type MasterInfo struct {
	URL       string   `json:"url"`
	Bin       string   `json:"bin,omitempty"`
	SHA256    string   `json:"sha256,omitempty"` // first 16 hex digits
	GoVersion string   `json:"goVersion,omitempty"`
	Module    string   `json:"module,omitempty"`
	Revision  string   `json:"revision,omitempty"` // vcs.revision (+ "-dirty" when modified)
	Args      []string `json:"args,omitempty"`     // the flags it was started with
	MasterID  string   `json:"masterId,omitempty"`
	Epoch     uint64   `json:"epoch,omitempty"`
	// OtherWorkers: workers ALIVE at the start that are not this run's (a
	// master not started by the tool may place executors on them).
	OtherWorkers int `json:"otherWorkers,omitempty"`
}

// binaryInfo hashes the master binary and reads what the Go toolchain
// recorded in it.
func binaryInfo(path string) MasterInfo {
	mi := MasterInfo{Bin: path}
	if f, err := os.Open(path); err == nil {
		h := sha256.New()
		if _, err := io.Copy(h, f); err == nil {
			mi.SHA256 = hex.EncodeToString(h.Sum(nil))[:16]
		}
		f.Close()
	}
	b, ok := benchstat.ReadBuild(path)
	if !ok {
		return mi
	}
	mi.GoVersion, mi.Module, mi.Revision = b.GoVersion, b.Module, b.Revision
	if mi.Revision != "" && b.Modified {
		mi.Revision += "-dirty"
	}
	return mi
}
