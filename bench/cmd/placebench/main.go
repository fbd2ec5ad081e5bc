// Command placebench judges berth's placement policies on a real
// production trace against a published table:
//
//	placebench openb --nodes FILE --pods FILE --policy NAME[,NAME...] --seeds 42-51 --csv OUT
//
// replays the Alibaba GPU cluster trace as the FGD paper (USENIX ATC 2023)
// does. docs/BENCHMARKS.md gives the figures and the commands that took
// them. (berthbench placement replays synthetic traces.)
package main

import (
	"io"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/berth-cluster/berth/bench/internal/benchtool"
	"github.com/berth-cluster/berth/bench/openb"
	_ "github.com/berth-cluster/berth/placement/gpushare" // registers the GPU-sharing policies
)

func main() { benchtool.Main(newApp(os.Stdout)) }

func newApp(stdout io.Writer) *cli.App {
	return &cli.App{
		Name:     "placebench",
		Usage:    "judge placement policies on a real cluster trace against a published table",
		Writer:   stdout,
		Commands: []*cli.Command{openb.Command(stdout)},
	}
}
