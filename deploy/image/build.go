package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// options are what build is given.
type options struct {
	out      string
	version  string
	revision string
	created  time.Time         // also every file's mtime
	bins     map[string]string // arch → directory of its binaries
}

// spec is one image.
type spec struct {
	name   string // the layout's ref.name
	binary string // its daemon, in /usr/bin
	uid    int
	ports  []string
	volume string
	config string // in /etc/berth
}

// masterUID is the master's user in its image: not root, and no user of
// the machine (65532 is distroless's "nonroot").
const masterUID = 65532

var images = []spec{
	{name: "berth-master", binary: "berth-master", uid: masterUID, ports: []string{"7077/tcp", "7177/tcp"}, volume: "/var/lib/berth-master", config: "master.toml"},
	{name: "berth-worker", binary: "berth-worker", uid: 0, ports: []string{"7078/tcp"}, volume: "/var/lib/berth-worker", config: "worker.toml"},
}

var (
	//go:embed master.toml
	masterConfig []byte
	//go:embed worker.toml
	workerConfig []byte
)

// refName is the OCI annotation that names an image in a layout
// (skopeo's oci:DIR:NAME, podman's oci:DIR:NAME).
const refName = "org.opencontainers.image.ref.name"

// build writes the layout: an index per image, an image per platform.
func build(o options) error {
	if o.created.IsZero() {
		o.created = time.Unix(0, 0).UTC()
	}
	if err := clearLayout(o.out); err != nil {
		return err
	}
	p, err := layout.Write(o.out, empty.Index)
	if err != nil {
		return err
	}
	shared := map[string][]v1.Layer{}
	for _, arch := range archs(o) {
		for _, files := range [][]file{baseFiles(o), {binary(o.bins[arch], "berth")}} {
			l, err := tarLayer(files, o.created)
			if err != nil {
				return fmt.Errorf("linux/%s: %w", arch, err)
			}
			shared[arch] = append(shared[arch], l)
		}
	}
	for _, s := range images {
		idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
		for _, arch := range archs(o) {
			img, err := s.image(o, arch, shared[arch])
			if err != nil {
				return fmt.Errorf("%s for linux/%s: %w", s.name, arch, err)
			}
			idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img,
				Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: arch}}})
		}
		idx = mutate.Annotations(idx, labels(o, s)).(v1.ImageIndex)
		if err := p.AppendIndex(idx, layout.WithAnnotations(map[string]string{refName: s.name})); err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
	}
	return nil
}

// clearLayout removes an earlier layout at dir, and refuses to write into
// a directory that holds anything else.
func clearLayout(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) || err == nil && len(entries) == 0 {
		return nil
	}
	if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(dir, "oci-layout")); err != nil {
		return fmt.Errorf("-out %s: not empty and not an OCI layout: give another directory", dir)
	}
	return os.RemoveAll(dir)
}

// image is s for one platform: the base file system, the CLI (both shared
// by the images, made once per platform), the daemon.
func (s spec) image(o options, arch string, shared []v1.Layer) (v1.Image, error) {
	daemon, err := tarLayer([]file{binary(o.bins[arch], s.binary)}, o.created)
	if err != nil {
		return nil, err
	}
	layers := append(slices.Clone(shared), daemon)
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	for i, l := range layers {
		what := []string{"the file system", "the berth CLI", s.binary}[i]
		img, err = mutate.Append(img, mutate.Addendum{Layer: l,
			History: v1.History{Created: v1.Time{Time: o.created}, CreatedBy: "deploy/image: " + what}})
		if err != nil {
			return nil, err
		}
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", arch
	cf.Created = v1.Time{Time: o.created}
	cf.Config.Entrypoint = []string{"/usr/bin/" + s.binary, "--config", "/etc/berth/" + s.config}
	cf.Config.User = fmt.Sprintf("%d:%d", s.uid, s.uid)
	cf.Config.Env = []string{"PATH=/usr/bin:/bin"}
	cf.Config.WorkingDir = s.volume
	cf.Config.ExposedPorts = map[string]struct{}{}
	for _, p := range s.ports {
		cf.Config.ExposedPorts[p] = struct{}{}
	}
	cf.Config.Volumes = map[string]struct{}{s.volume: {}}
	cf.Config.Labels = labels(o, s)
	return mutate.ConfigFile(img, cf)
}

// labels are the OCI annotations' names for what the image is.
func labels(o options, s spec) map[string]string {
	l := map[string]string{
		"org.opencontainers.image.title":   s.name,
		"org.opencontainers.image.version": o.version,
	}
	if o.revision != "" {
		l["org.opencontainers.image.revision"] = o.revision
	}
	return l
}

// file is one entry of a layer.
type file struct {
	name     string // without a leading /; a directory ends in /
	mode     int64
	uid      int
	data     []byte
	fromDisk string // read at layering, instead of data
}

// baseFiles are the file system every image starts from: the users, a
// /tmp, the state directories and the images' configurations.
func baseFiles(o options) []file {
	m := masterUID
	return []file{
		{name: "etc/", mode: 0o755},
		{name: "etc/passwd", mode: 0o644, data: fmt.Appendf(nil, "root:x:0:0:root:/root:/sbin/nologin\nberth:x:%d:%d:berth master:/var/lib/berth-master:/sbin/nologin\n", m, m)},
		{name: "etc/group", mode: 0o644, data: fmt.Appendf(nil, "root:x:0:\nberth:x:%d:\n", m)},
		// Go's resolver reads it: the hosts file, then DNS.
		{name: "etc/nsswitch.conf", mode: 0o644, data: []byte("hosts: files dns\n")},
		{name: "etc/berth/", mode: 0o755},
		{name: "etc/berth/master.toml", mode: 0o644, data: masterConfig},
		{name: "etc/berth/worker.toml", mode: 0o644, data: workerConfig},
		{name: "root/", mode: 0o700},
		{name: "tmp/", mode: 0o1777},
		{name: "usr/", mode: 0o755},
		{name: "usr/bin/", mode: 0o755},
		{name: "var/", mode: 0o755},
		{name: "var/lib/", mode: 0o755},
		{name: "var/lib/berth-master/", mode: 0o700, uid: m},
		// Traversable: run-as = "dynamic" processes reach their directories below.
		{name: "var/lib/berth-worker/", mode: 0o755},
	}
}

func binary(dir, name string) file {
	return file{name: "usr/bin/" + name, mode: 0o755, fromDisk: filepath.Join(dir, name)}
}

// tarLayer makes a layer of files, every mtime at mtime, so that the same
// binaries make the same layer.
func tarLayer(files []file, mtime time.Time) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		data := f.data
		if f.fromDisk != "" {
			var err error
			if data, err = os.ReadFile(f.fromDisk); err != nil {
				return nil, err
			}
		}
		h := &tar.Header{Name: f.name, Mode: f.mode, Uid: f.uid, Gid: f.uid, ModTime: mtime, Format: tar.FormatPAX}
		if h.Name[len(h.Name)-1] == '/' {
			h.Typeflag = tar.TypeDir
		} else {
			h.Typeflag, h.Size = tar.TypeReg, int64(len(data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	// Compressed once, here, with both digests: go-containerregistry's own
	// layers would compress again for each use. At its level, BestSpeed:
	// a few percent larger than the default, several times faster.
	var gz bytes.Buffer
	zw, err := gzip.NewWriterLevel(&gz, gzip.BestSpeed)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(buf.Bytes()); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	l := &layer{tar: buf.Bytes(), gz: gz.Bytes()}
	if l.diffID, _, err = v1.SHA256(bytes.NewReader(l.tar)); err != nil {
		return nil, err
	}
	if l.digest, _, err = v1.SHA256(bytes.NewReader(l.gz)); err != nil {
		return nil, err
	}
	return l, nil
}

// layer is a v1.Layer held in memory: its tar and its gzip.
type layer struct {
	tar, gz        []byte
	diffID, digest v1.Hash
}

func (l *layer) Digest() (v1.Hash, error)           { return l.digest, nil }
func (l *layer) DiffID() (v1.Hash, error)           { return l.diffID, nil }
func (l *layer) Compressed() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(l.gz)), nil }
func (l *layer) Uncompressed() (io.ReadCloser, error) {
	return io.NopCloser(bytes.NewReader(l.tar)), nil
}
func (l *layer) Size() (int64, error)                { return int64(len(l.gz)), nil }
func (l *layer) MediaType() (types.MediaType, error) { return types.OCILayer, nil }
