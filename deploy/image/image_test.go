package main

import (
	"archive/tar"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
)

const testVersion = "v0.0.0-imagetest"

// buildBinaries builds the three binaries for this machine, stamped with
// testVersion, named as scripts/build-linux.sh names them.
func buildBinaries(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	// Stripped, as scripts/build-linux.sh builds them.
	ldflags := "-s -w -X github.com/berth-cluster/berth/internal/version.version=" + testVersion
	for out, pkg := range map[string]string{"berth-master": "../../cmd/master", "berth-worker": "../../cmd/worker", "berth": "../../cmd/berth"} {
		cmd := exec.Command("go", "build", "-ldflags", ldflags, "-o", filepath.Join(dir, out), pkg)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("building %s: %v\n%s", pkg, err, b)
		}
	}
	return dir
}

// The images read back from the layout have their daemon as entrypoint,
// the master a user that is not root, the ports and volumes; their files
// are a working system: the binaries print their version, the images'
// configurations load, the master's state directory is its user's.
func TestImagesReadBack(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "layout")
	created := time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC)
	o := options{out: out, version: testVersion, revision: "abc123", created: created, bins: map[string]string{runtime.GOARCH: buildBinaries(t)}}
	if err := build(o); err != nil {
		t.Fatal(err)
	}

	want := map[string]struct {
		entrypoint []string
		user       string
		ports      []string
		volume     string
	}{
		"berth-master": {[]string{"/usr/bin/berth-master", "--config", "/etc/berth/master.toml"}, "65532:65532", []string{"7077/tcp", "7177/tcp"}, "/var/lib/berth-master"},
		"berth-worker": {[]string{"/usr/bin/berth-worker", "--config", "/etc/berth/worker.toml"}, "0:0", []string{"7078/tcp"}, "/var/lib/berth-worker"},
	}
	layers := map[string][]v1.Hash{}
	for name, w := range want {
		img := readImage(t, out, name)
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		c := cf.Config
		if !slices.Equal(c.Entrypoint, w.entrypoint) || c.User != w.user || !cf.Created.Time.Equal(created) ||
			cf.OS != "linux" || cf.Architecture != runtime.GOARCH {
			t.Errorf("%s: entrypoint %q, user %q, created %v, platform %s/%s", name, c.Entrypoint, c.User, cf.Created, cf.OS, cf.Architecture)
		}
		var ports []string
		for p := range c.ExposedPorts {
			ports = append(ports, p)
		}
		slices.Sort(ports)
		if !slices.Equal(ports, w.ports) {
			t.Errorf("%s: exposed ports %v, want %v", name, ports, w.ports)
		}
		if _, ok := c.Volumes[w.volume]; !ok || len(c.Volumes) != 1 {
			t.Errorf("%s: volumes %v, want %s", name, c.Volumes, w.volume)
		}
		if c.Labels["org.opencontainers.image.version"] != testVersion || c.Labels["org.opencontainers.image.revision"] != "abc123" {
			t.Errorf("%s: labels %v", name, c.Labels)
		}
		ls, err := img.Layers()
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range ls {
			d, _ := l.Digest()
			layers[name] = append(layers[name], d)
		}

		root, owners := extract(t, img)
		daemon := filepath.Join(root, strings.TrimPrefix(w.entrypoint[0], "/"))
		program := strings.TrimPrefix(filepath.Base(daemon), "berth-")
		v, err := exec.Command(daemon, "--version").Output()
		if err != nil || !strings.HasPrefix(string(v), program+" "+testVersion+"\n") {
			t.Errorf("%s: %s --version: %v\n%s", name, w.entrypoint[0], err, v)
		}
		cfg := filepath.Join(root, "etc/berth", filepath.Base(w.entrypoint[2]))
		p, err := exec.Command(daemon, "--config", cfg, "--print-config").CombinedOutput()
		if err != nil || !strings.Contains(string(p), w.volume) || !strings.Contains(string(p), `host = "0.0.0.0"`) {
			t.Errorf("%s: its configuration does not load: %v\n%s", name, err, p)
		}
		if v, err := exec.Command(filepath.Join(root, "usr/bin/berth"), "--version").Output(); err != nil || !strings.HasPrefix(string(v), "berth "+testVersion) {
			t.Errorf("%s: berth --version: %v\n%s", name, err, v)
		}
		if owners["var/lib/berth-master"] != 65532 || owners["var/lib/berth-worker"] != 0 || owners["usr/bin/berth-master"] != 0 {
			t.Errorf("%s: state directories owned by %v", name, owners)
		}
		passwd, _ := os.ReadFile(filepath.Join(root, "etc/passwd"))
		if !strings.Contains(string(passwd), "berth:x:65532:65532:") {
			t.Errorf("%s: /etc/passwd has no berth user:\n%s", name, passwd)
		}
	}
	// The file system and the CLI are one pair of layers, stored once.
	m, w := layers["berth-master"], layers["berth-worker"]
	if len(m) != 3 || len(w) != 3 || m[0] != w[0] || m[1] != w[1] || m[2] == w[2] {
		t.Errorf("layers: master %v, worker %v", m, w)
	}
}

// A second build replaces the first layout, rather than adding to it; a
// directory that holds anything but a layout is not written over.
func TestReplacesALayoutOnly(t *testing.T) {
	t.Parallel()
	bins := t.TempDir()
	for _, name := range []string{"berth-master", "berth-worker", "berth"} {
		if err := os.WriteFile(filepath.Join(bins, name), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(t.TempDir(), "layout")
	for i := range 2 {
		if err := build(options{out: out, version: "v" + strconv.Itoa(i), bins: map[string]string{"amd64": bins, "arm64": bins}}); err != nil {
			t.Fatalf("build %d: %v", i, err)
		}
	}
	root, err := layout.ImageIndexFromPath(out)
	if err != nil {
		t.Fatal(err)
	}
	im, err := root.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Manifests) != 2 {
		t.Fatalf("%d images in the layout after two builds, want 2", len(im.Manifests))
	}
	for _, d := range im.Manifests {
		idx, err := root.ImageIndex(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		m, err := idx.IndexManifest()
		if err != nil {
			t.Fatal(err)
		}
		if len(m.Manifests) != 2 || m.Annotations["org.opencontainers.image.version"] != "v1" {
			t.Errorf("%s: %d platforms, annotations %v", d.Annotations[refName], len(m.Manifests), m.Annotations)
		}
	}
}

// A directory that holds anything but a layout is not written over.
func TestRefusesToOverwriteOtherFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "precious"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	err := build(options{out: dir, bins: map[string]string{runtime.GOARCH: t.TempDir()}})
	if err == nil || !strings.Contains(err.Error(), "not an OCI layout") {
		t.Errorf("build over another directory: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "precious")); err != nil {
		t.Error(err)
	}
}

// readImage is this platform's image of the index named name.
func readImage(t *testing.T, dir, name string) v1.Image {
	t.Helper()
	root, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	im, err := root.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range im.Manifests {
		if d.Annotations[refName] != name {
			continue
		}
		idx, err := root.ImageIndex(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		m, err := idx.IndexManifest()
		if err != nil {
			t.Fatal(err)
		}
		for _, pd := range m.Manifests {
			if pd.Platform != nil && pd.Platform.OS == "linux" && pd.Platform.Architecture == runtime.GOARCH {
				img, err := idx.Image(pd.Digest)
				if err != nil {
					t.Fatal(err)
				}
				return img
			}
		}
	}
	t.Fatalf("no image %s for linux/%s in %s", name, runtime.GOARCH, dir)
	return nil
}

// extract writes the image's flattened file system (directories and
// regular files) under a temporary directory, and returns it with each
// entry's owner.
func extract(t *testing.T, img v1.Image) (string, map[string]int) {
	t.Helper()
	root := t.TempDir()
	owners := map[string]int{}
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		name := strings.Trim(filepath.Clean("/"+h.Name), "/")
		owners[name] = h.Uid
		path := filepath.Join(root, name)
		// The flattened stream lists the top layer's files first, before
		// the directories a lower layer holds them in.
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		switch h.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(path, 0o755)
		case tar.TypeReg:
			var f *os.File
			if f, err = os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, os.FileMode(h.Mode)&0o755); err == nil {
				_, err = io.Copy(f, tr)
				f.Close()
			}
		default:
			t.Errorf("unexpected entry %s of type %c", h.Name, h.Typeflag)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return root, owners
}
