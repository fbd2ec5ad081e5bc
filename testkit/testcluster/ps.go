package testcluster

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Process is one process of the machine as /proc shows it: how tests find
// the processes berth started for them, by a marker on their command line.
type Process struct {
	Pid, PPid int
	State     string // stat's state letter: Z for an exited one not yet reaped
	Cmdline   string // its arguments, joined by spaces
}

// Processes lists the machine's processes now; one that ends while they are
// read may be left out.
func Processes() []Process {
	dirs, _ := os.ReadDir("/proc")
	var out []Process
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", d.Name(), "cmdline"))
		if err != nil {
			continue
		}
		p := Process{Pid: pid, Cmdline: strings.TrimSpace(string(bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '})))}
		p.State, p.PPid = procStat(d.Name())
		out = append(out, p)
	}
	return out
}

// procStat returns a process's state letter and parent pid from
// /proc/PID/stat ("", 0 if it is gone). The command name, in parentheses,
// may hold spaces: the fields are counted after its closing one.
func procStat(pid string) (state string, ppid int) {
	stat, err := os.ReadFile(filepath.Join("/proc", pid, "stat"))
	if err != nil {
		return "", 0
	}
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return "", 0
	}
	fields := strings.Fields(string(stat[i+1:]))
	if len(fields) < 2 {
		return "", 0
	}
	ppid, _ = strconv.Atoi(fields[1])
	return fields[0], ppid
}

// Marked returns the processes alive now whose command line holds marker, a string only one test's processes carry. Left out: this
// process, exited ones not yet reaped, and a child forked but not yet
// exec'd, which carries its parent's command line (a shell starting
// `sleep`): it is the parent, not another process.
func Marked(marker string) []Process {
	ps := Processes()
	cmdlineOf := make(map[int]string, len(ps))
	for _, p := range ps {
		cmdlineOf[p.Pid] = p.Cmdline
	}
	var out []Process
	for _, p := range ps {
		if strings.Contains(p.Cmdline, marker) && p.Pid != os.Getpid() && p.State != "Z" && cmdlineOf[p.PPid] != p.Cmdline {
			out = append(out, p)
		}
	}
	return out
}
