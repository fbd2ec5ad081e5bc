package benchstat

import (
	"debug/buildinfo"
	"os"
	"strconv"
	"strings"
)

// ClockTicks is USER_HZ, the unit of ProcStat's times: 100 on every Linux
// architecture Go runs on.
const ClockTicks = 100

// ProcStat is what benchmarks read of a process in /proc/<pid>/stat.
type ProcStat struct {
	State    string // R, S, D, Z (a zombie has ended) ...
	PPID     int
	Session  int
	CPUTicks int64 // user + system time so far, in ClockTicks
	// StartTicks is when the process started, in ClockTicks since boot:
	// with the pid it names one process for good (pids are reused).
	StartTicks uint64
}

// ReadProcStat reads /proc/<pid>/stat; false when there is no such process
// (or no /proc).
func ReadProcStat(pid int) (ProcStat, bool) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ProcStat{}, false
	}
	return ParseProcStat(string(data))
}

// ParseProcStat reads one /proc/<pid>/stat line. Its fields are counted
// from the end of the command name, which may hold spaces and parentheses.
func ParseProcStat(line string) (ProcStat, bool) {
	i := strings.LastIndexByte(line, ')')
	if i < 0 {
		return ProcStat{}, false
	}
	f := strings.Fields(line[i+1:]) // state is f[0], as field 3 of proc(5)
	if len(f) < 20 {
		return ProcStat{}, false
	}
	ppid, err1 := strconv.Atoi(f[1])
	sid, err2 := strconv.Atoi(f[3])
	utime, err3 := strconv.ParseInt(f[11], 10, 64)
	stime, err4 := strconv.ParseInt(f[12], 10, 64)
	start, err5 := strconv.ParseUint(f[19], 10, 64)
	for _, err := range []error{err1, err2, err3, err4, err5} {
		if err != nil {
			return ProcStat{}, false
		}
	}
	return ProcStat{State: f[0], PPID: ppid, Session: sid, CPUTicks: utime + stime, StartTicks: start}, true
}

// Build is what the Go toolchain recorded in a binary: which code was
// measured.
type Build struct {
	GoVersion string
	Module    string // path@version
	Revision  string // vcs.revision, "" without a stamp
	Modified  bool   // built from a tree with changes
}

// ReadBuild reads the build information of the binary at path.
func ReadBuild(path string) (Build, bool) {
	bi, err := buildinfo.ReadFile(path)
	if err != nil {
		return Build{}, false
	}
	b := Build{GoVersion: bi.GoVersion, Module: bi.Main.Path + "@" + bi.Main.Version}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			b.Revision = s.Value
		case "vcs.modified":
			b.Modified = s.Value == "true"
		}
	}
	return b, true
}
