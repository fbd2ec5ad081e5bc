package benchstat

import (
	"os"
	"testing"
)

func TestParseProcStat(t *testing.T) {
	line := "1234 (sleep (x) y) S 99 1234 1234 0 -1 4194304 0 0 0 0 7 5 0 0 20 0 1 0 5555 1000 0"
	st, ok := ParseProcStat(line)
	if !ok || st.State != "S" || st.PPID != 99 || st.Session != 1234 || st.CPUTicks != 12 || st.StartTicks != 5555 {
		t.Errorf("ParseProcStat = %+v, %v", st, ok)
	}
	for _, bad := range []string{"", "1234 sleep S 1", "1 (x) S 1 2"} {
		if _, ok := ParseProcStat(bad); ok {
			t.Errorf("ParseProcStat(%q) accepted", bad)
		}
	}
}

func TestReadProcStat(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	st, ok := ReadProcStat(os.Getpid())
	if !ok || st.PPID != os.Getppid() || st.CPUTicks < 0 || st.StartTicks == 0 {
		t.Errorf("ReadProcStat(self) = %+v, %v", st, ok)
	}
	if _, ok := ReadProcStat(-1); ok {
		t.Error("ReadProcStat(-1) found a process")
	}
}

func TestReadBuild(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Skip(err)
	}
	b, ok := ReadBuild(exe)
	if !ok || b.GoVersion == "" || b.Module == "" {
		t.Errorf("ReadBuild(test binary) = %+v, %v", b, ok)
	}
	if _, ok := ReadBuild(os.DevNull); ok {
		t.Error("ReadBuild(/dev/null) found a build")
	}
}
