package failover

import (
	"os"
	"testing"
)

func TestProcStartAndChildren(t *testing.T) {
	if _, ok := procStart(os.Getpid()); !ok {
		t.Error("no start time for this process")
	}
	kids := childrenOf(map[int]bool{os.Getppid(): true})
	if _, ok := kids[os.Getpid()]; !ok {
		t.Error("this process is not among its parent's children")
	}
}
