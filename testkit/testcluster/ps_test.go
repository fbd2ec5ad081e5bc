package testcluster

import (
	"fmt"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/berth-cluster/berth/testkit/testproc"
)

func TestMarked(t *testing.T) {
	const marker = "0.00424242"
	cmd := exec.Command("sleep", "30", marker)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	var pids []int
	testproc.Eventually(t, 5*time.Second, "the marked sleep listed", func() error {
		pids = pids[:0]
		for _, p := range Marked(marker) {
			pids = append(pids, p.Pid)
		}
		if !slices.Equal(pids, []int{cmd.Process.Pid}) {
			return fmt.Errorf("marked pids %v, want [%d]", pids, cmd.Process.Pid)
		}
		return nil
	})
}
