package spawn

import (
	"context"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/berth-cluster/berth/testkit/testproc"
)

// helperEnv makes the test binary a parent that starts a child through
// Start, prints its pid and waits to be killed.
const helperEnv = "SPAWN_TEST_PARENT"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "1" {
		cmd := exec.Command("sleep", "60")
		cmd.SysProcAttr = Attr()
		if err := Start(context.Background(), cmd, nil); err != nil {
			os.Exit(2)
		}
		os.Stdout.WriteString(strconv.Itoa(cmd.Process.Pid) + "\n")
		time.Sleep(time.Minute)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// Every Start runs on one thread, and started sees the child's pid there
// before Start returns, whichever goroutine asks.
func TestStartsOnOneThread(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("thread ids are Linux's")
	}
	var (
		mu   sync.Mutex
		tids = map[int]bool{}
		wg   sync.WaitGroup
	)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command("true")
			cmd.SysProcAttr = Attr()
			seen := 0
			err := Start(context.Background(), cmd, func(pid int) {
				mu.Lock()
				tids[syscall.Gettid()] = true
				mu.Unlock()
				seen = pid
			})
			if err != nil {
				t.Error(err)
				return
			}
			if seen != cmd.Process.Pid {
				t.Errorf("started saw pid %d, the child is %d", seen, cmd.Process.Pid)
			}
			_ = cmd.Wait()
		}()
	}
	wg.Wait()
	if len(tids) != 1 {
		t.Errorf("children started from %d threads, want 1", len(tids))
	}
}

func TestStartFailureSkipsStarted(t *testing.T) {
	cmd := exec.Command("/nonexistent/berth-spawn-test")
	called := false
	if err := Start(context.Background(), cmd, func(int) { called = true }); err == nil {
		t.Fatal("started a command that does not exist")
	}
	if called {
		t.Error("started was called for a failed Start")
	}
}

// A child started with Attr dies when its parent is killed with SIGKILL.
func TestChildDiesWithParent(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("Pdeathsig is Linux's")
	}
	if _, err := exec.LookPath("sleep"); err != nil {
		t.Skip("no sleep command")
	}
	testproc.ChildOutlivesKilledParent(t, helperEnv+"=1")
}
