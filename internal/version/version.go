// Package version says which build of berth this is, the same way in
// master, worker and berth: --version, and the berth_build_info metric.
//
// The version string is set at link time by the Makefile
// (-ldflags "-X github.com/berth-cluster/berth/internal/version.version=v1.2.3");
// the commit, its time and whether the tree had uncommitted changes come
// from the build information the Go toolchain embeds (go build
// -buildvcs=true, the default in a git checkout), and the build time from
// -X ...version.buildTime when the Makefile sets it. A plain `go build`
// without them says "devel" and "unknown": a binary never claims a version
// it was not given.
package version

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strconv"

	"github.com/urfave/cli/v2"
)

// Set by the linker (-X); empty otherwise.
var (
	version   string
	buildTime string
)

// Unknown stands for what the build did not record.
const Unknown = "unknown"

// Info is one binary's build.
type Info struct {
	Version    string // git describe --tags --always --dirty, or the module's version, or "devel"
	Commit     string // vcs.revision, or Unknown
	CommitTime string // vcs.time (RFC 3339, UTC), or Unknown
	Modified   bool   // vcs.modified: built from a tree with uncommitted changes
	BuildTime  string // set by the Makefile, or Unknown
	GoVersion  string // the toolchain that built it
	Platform   string // GOOS/GOARCH
}

// Get reads this binary's build.
func Get() Info {
	bi, _ := debug.ReadBuildInfo()
	return fromBuildInfo(bi, version, buildTime)
}

// fromBuildInfo is Get for any build information and linker values (tests).
func fromBuildInfo(bi *debug.BuildInfo, linkedVersion, linkedBuildTime string) Info {
	info := Info{
		Version:    linkedVersion,
		Commit:     Unknown,
		CommitTime: Unknown,
		BuildTime:  linkedBuildTime,
		GoVersion:  runtime.Version(),
		Platform:   runtime.GOOS + "/" + runtime.GOARCH,
	}
	if bi != nil {
		info.GoVersion = bi.GoVersion
		// `go install module@v1.2.3` records the module's version;
		// a build inside the checkout says "(devel)".
		if info.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			info.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				info.Commit = s.Value
			case "vcs.time":
				info.CommitTime = s.Value
			case "vcs.modified":
				info.Modified, _ = strconv.ParseBool(s.Value)
			}
		}
	}
	if info.Version == "" {
		info.Version = "devel"
	}
	if info.BuildTime == "" {
		info.BuildTime = Unknown
	}
	return info
}

// Write prints the build as --version does, program first:
//
//	master v0.4.0-3-g4c89b34
//	commit:      4c89b34e0c1d... (modified)
//	commit time: 2026-11-26T19:34:00Z
//	built:       2026-11-26T19:40:12Z
//	go:          go1.26.8 linux/amd64
func (i Info) Write(w io.Writer, program string) error {
	commit := i.Commit
	if i.Modified {
		commit += " (modified)"
	}
	_, err := fmt.Fprintf(w, "%s %s\ncommit:      %s\ncommit time: %s\nbuilt:       %s\ngo:          %s %s\n",
		program, i.Version, commit, i.CommitTime, i.BuildTime, i.GoVersion, i.Platform)
	return err
}

// Flag is --version, the same in every binary. It is a plain boolean the
// binary checks first (Printed), rather than urfave's own version flag,
// so that it has no -v alias and prints the same lines everywhere.
func Flag() cli.Flag {
	return &cli.BoolFlag{Name: "version", Usage: "print the version, commit, build time and Go version, and exit"}
}

// Printed prints the build to the app's writer and reports true when
// --version was given: the caller then stops, successfully.
func Printed(cx *cli.Context) (bool, error) {
	if !cx.Bool("version") {
		return false, nil
	}
	return true, Get().Write(cx.App.Writer, cx.App.Name)
}
