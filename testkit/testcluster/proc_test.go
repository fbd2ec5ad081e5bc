package testcluster

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/berth-cluster/berth/testkit/testproc"
)

// parentEnv makes the test binary a parent that starts a sleep with Start,
// prints its pid and waits to be killed: a test run that never cleans up.
const parentEnv = "TESTCLUSTER_TEST_PARENT"

func TestMain(m *testing.M) {
	if dir := os.Getenv(parentEnv); dir != "" {
		p, err := Start(&CommandHost{}, "sleep", "/bin/sleep", filepath.Join(dir, "sleep.log"), []string{"60"}, ProcOptions{})
		if err != nil {
			os.Exit(2)
		}
		os.Stdout.WriteString(strconv.Itoa(p.Pid()) + "\n")
		time.Sleep(time.Minute)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// What Start starts dies with the process that started it, even one
// SIGKILLed before its cleanup could run (a test binary past its -timeout):
// a chaos run stopped that way leaves no masters or workers behind.
func TestStartedProcessDiesWithItsStarter(t *testing.T) {
	if _, err := os.Stat("/bin/sleep"); err != nil {
		t.Skip("no /bin/sleep")
	}
	testproc.ChildOutlivesKilledParent(t, parentEnv+"="+t.TempDir())
}
