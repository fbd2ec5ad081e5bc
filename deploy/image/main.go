// Command image builds berth's OCI images with go-containerregistry, without
// a container daemon or a base image (the binaries are static): one OCI
// image layout holding berth-master and berth-worker, each an index of one
// image per platform (make image, scripts/image.sh; docs/OPERATIONS.md).
//
//	go run ./deploy/image -out out/image -version v1.2.3 -bin amd64=DIR -bin arm64=DIR
//
// Two images rather than one, because the daemons need different defaults:
// the master runs as a user of its own (65532), the worker as root (it
// makes cgroups and, with run-as = "dynamic", switches users). Each image
// has its daemon as its entrypoint, its user, its ports and its volume. They
// share their first two layers (the file system and the berth CLI), which
// the layout stores once.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"
)

func main() {
	o := options{bins: map[string]string{}}
	flag.StringVar(&o.out, "out", "out/image", "the OCI image layout `DIR` to write (replaced if it is one)")
	flag.StringVar(&o.version, "version", "devel", "the images' version (their label and tag)")
	flag.StringVar(&o.revision, "revision", "", "the commit they are built from (a label)")
	created := flag.String("created", "", "their creation time, RFC 3339 (default: the Unix epoch, for reproducible images)")
	flag.Func("bin", "`ARCH=DIR`: the linux/ARCH binaries (berth-master, berth-worker, berth) in DIR; repeat per platform", func(s string) error {
		arch, dir, ok := strings.Cut(s, "=")
		if !ok || arch == "" || dir == "" {
			return errors.New("want ARCH=DIR")
		}
		if _, dup := o.bins[arch]; dup {
			return fmt.Errorf("%s given twice", arch)
		}
		o.bins[arch] = dir
		return nil
	})
	flag.Parse()
	if *created != "" {
		t, err := time.Parse(time.RFC3339, *created)
		if err != nil {
			fmt.Fprintf(os.Stderr, "image: -created %q: %v\n", *created, err)
			os.Exit(2)
		}
		o.created = t.UTC()
	}
	if len(o.bins) == 0 || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "image: give -bin ARCH=DIR for each platform, and no arguments")
		os.Exit(2)
	}
	if err := build(o); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
	for _, s := range images {
		fmt.Printf("image: %s:%s (%s) in %s\n", s.name, o.version, strings.Join(archs(o), ", "), o.out)
	}
}

// archs are the platforms' architectures, in a stable order.
func archs(o options) []string {
	var a []string
	for arch := range o.bins {
		a = append(a, arch)
	}
	slices.Sort(a)
	return a
}
