package worker

// What a worker takes when a flag is not given: its memory, its id, and
// the proof that its work directory is writable.

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/berth-cluster/berth/wire"
)

// checkWritableDir creates dir if needed and proves it writable by creating
// a file in it: a worker that cannot write its work directory would fail
// every launch, better to refuse to start.
func checkWritableDir(dir string) error {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return fmt.Errorf("cannot create it: %w", err)
	}
	f, err := os.CreateTemp(dir, ".berth-write-test-*")
	if err != nil {
		return fmt.Errorf("cannot write in it: %w", err)
	}
	name := f.Name()
	f.Close()
	if err := os.Remove(name); err != nil {
		return fmt.Errorf("cannot remove a file in it: %w", err)
	}
	return nil
}

// DefaultMemoryMB is the machine's memory (MemTotal of /proc/meminfo) minus
// 1 GiB for the OS, at least 1 GiB, as Spark's worker offers by default.
func DefaultMemoryMB() int {
	total, err := memTotalMB("/proc/meminfo")
	if err != nil || total-reservedMemoryMB < minDefaultMemoryMB {
		return minDefaultMemoryMB
	}
	return min(total-reservedMemoryMB, wire.MaxMemoryMB)
}

// memTotalMB reads MemTotal (in kB) from a meminfo file.
func memTotalMB(path string) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "MemTotal:" {
			kb, err := strconv.Atoi(fields[1])
			if err != nil {
				return 0, fmt.Errorf("%s: MemTotal %q: %w", path, fields[1], err)
			}
			return kb / 1024, nil
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("%s: no MemTotal line", path)
}

// defaultID is Spark's worker id: worker-<timestamp>-<host>-<port>, with the
// host reduced to id-safe characters (an IPv6 address has colons).
func defaultID(now time.Time, host string, port int) string {
	safe := []byte(host)
	for i, c := range safe {
		if !idChar(rune(c)) {
			safe[i] = '_'
		}
	}
	return fmt.Sprintf("worker-%s-%s-%d", now.Format("20060102150405"), strings.ReplaceAll(string(safe), "..", "_"), port)
}
