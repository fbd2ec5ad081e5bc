package deploy

import (
	"archive/tar"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"path"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"testing/fstest"
)

const (
	debVersion = "v0.0.0-debtest"
	debPkgVer  = "0.0.0+debtest" // as scripts/dist.sh turns it for Debian
)

var packages = []string{"berth-master", "berth-worker", "berth-cli"}

// run runs a command and fails the test if it fails.
func run(t *testing.T, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// installed reports whether dpkg has pkg installed (or half so).
func installed(pkg string) bool {
	out, err := exec.Command("dpkg-query", "-W", "-f=${db:Status-Status}", pkg).Output()
	return err == nil && string(out) != "not-installed" && string(out) != ""
}

// make dist, for this machine's architecture: the tarball holds the
// binaries, units, example configurations and docs; the .deb packages
// install with dpkg (the master's user made, its state directory and
// configuration its own, the units verified as installed, every binary
// printing the version it was built with), and purge again, leaving the
// master's state and user, which the test then removes.
func TestDistInstallAndPurge(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("installing packages needs root (CI runs as root)")
	}
	if _, err := exec.LookPath("dpkg"); err != nil {
		t.Skip("no dpkg: not a Debian system")
	}
	for _, p := range packages {
		if installed(p) {
			t.Skipf("%s is installed on this machine: the test installs and purges its own, and leaves that one alone", p)
		}
	}
	_, err := user.Lookup("berth")
	userBefore := err == nil
	stateBefore := map[string]bool{}
	for _, dir := range []string{"/var/lib/berth-master", "/var/lib/berth-worker"} {
		_, err := os.Stat(dir)
		stateBefore[dir] = err == nil
	}
	t.Cleanup(func() {
		// Whatever happened: nothing of the test stays on the machine.
		for _, p := range packages {
			if installed(p) {
				_ = exec.Command("dpkg", "--purge", p).Run()
			}
		}
		for dir, existed := range stateBefore {
			if !existed {
				os.RemoveAll(dir)
			}
		}
		if !userBefore {
			_ = exec.Command("userdel", "berth").Run()
		}
	})

	out := t.TempDir()
	arch := runtime.GOARCH
	repo, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	run(t, []string{"ARCHES=" + arch, "VERSION=" + debVersion, "BUILD_TIME=2026-11-26T00:00:00Z"}, filepath.Join(repo, "scripts/dist.sh"), out)

	checkTarball(t, filepath.Join(out, "berth-"+debVersion+"-linux-"+arch+".tar.gz"), "berth-"+debVersion+"-linux-"+arch+"/")

	var debs []string
	for _, p := range packages {
		debs = append(debs, filepath.Join(out, p+"_"+debPkgVer+"_"+arch+".deb"))
	}
	run(t, nil, "dpkg", append([]string{"--install"}, debs...)...)

	for path, want := range map[string]struct {
		mode       os.FileMode
		owner, grp string
		dir        bool
	}{
		"/usr/bin/berth-master":                          {mode: 0o755, owner: "root", grp: "root"},
		"/usr/bin/berth-worker":                          {mode: 0o755, owner: "root", grp: "root"},
		"/usr/bin/berth":                                 {mode: 0o755, owner: "root", grp: "root"},
		"/usr/lib/systemd/system/berth-master.service":   {mode: 0o644, owner: "root", grp: "root"},
		"/usr/lib/systemd/system/berth-worker.service":   {mode: 0o644, owner: "root", grp: "root"},
		"/etc/berth/master.toml":                         {mode: 0o640, owner: "root", grp: "berth"},
		"/etc/berth/worker.toml":                         {mode: 0o600, owner: "root", grp: "root"},
		"/etc/berth/berth.toml":                          {mode: 0o644, owner: "root", grp: "root"},
		"/usr/share/doc/berth-master/docs/OPERATIONS.md": {mode: 0o644, owner: "root", grp: "root"},
		"/usr/share/doc/berth-worker/docs/SECURITY.md":   {mode: 0o644, owner: "root", grp: "root"},
		"/usr/share/doc/berth-cli/LICENSE":               {mode: 0o644, owner: "root", grp: "root"},
		"/usr/share/doc/berth-master/copyright":          {mode: 0o644, owner: "root", grp: "root"},
		"/var/lib/berth-master":                          {mode: 0o700, owner: "berth", grp: "berth", dir: true},
		"/var/lib/berth-worker":                          {mode: 0o755, owner: "root", grp: "root", dir: true},
	} {
		checkFile(t, path, want.mode, want.owner, want.grp, want.dir)
	}
	// Every package carries the licence, and says so in its copyright file.
	for _, p := range packages {
		for _, f := range []string{"LICENSE", "copyright"} {
			checkFile(t, "/usr/share/doc/"+p+"/"+f, 0o644, "root", "root", false)
		}
	}
	// Every relative link of README and of every doc leads to a file the
	// package has (it shipped README and OPERATIONS.md alone, and every
	// link went nowhere; then docs/ linked to ../deploy, ../examples and
	// ../spark, none of them shipped).
	for _, p := range packages {
		checkLinks(t, p, os.DirFS("/usr/share/doc/"+p))
	}
	for p, conf := range map[string]string{"berth-master": "/etc/berth/master.toml", "berth-worker": "/etc/berth/worker.toml", "berth-cli": "/etc/berth/berth.toml"} {
		if c := run(t, nil, "dpkg-query", "-W", "-f=${Conffiles}", p); !strings.Contains(c, conf) {
			t.Errorf("%s: conffiles %q, want %s", p, c, conf)
		}
	}

	// The master's user: a system user with no shell, at home in its state.
	u, err := user.Lookup("berth")
	if err != nil {
		t.Fatalf("no berth user: %v", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if uid == 0 || uid >= 1000 || u.HomeDir != "/var/lib/berth-master" {
		t.Errorf("berth user: uid %d, home %s", uid, u.HomeDir)
	}
	if passwd := run(t, nil, "getent", "passwd", "berth"); !strings.HasSuffix(strings.TrimSpace(passwd), ":/usr/sbin/nologin") {
		t.Errorf("berth user's shell: %s", passwd)
	}
	// It reads its configuration (root:berth 0640).
	printCfg := exec.Command("/usr/bin/berth-master", "--config", "/etc/berth/master.toml", "--print-config")
	printCfg.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
	if b, err := printCfg.CombinedOutput(); err != nil || !strings.Contains(string(b), `data-dir = "/var/lib/berth-master"`) {
		t.Errorf("berth-master as the berth user, --config /etc/berth/master.toml --print-config: %v\n%s", err, b)
	}

	// The units as installed, their binaries in place.
	if v, err := analyze(t, "verify", "--man=no", "/usr/lib/systemd/system/berth-master.service", "/usr/lib/systemd/system/berth-worker.service"); err != nil || strings.TrimSpace(v) != "" {
		t.Errorf("systemd-analyze verify of the installed units: %v\n%s", err, v)
	}

	for bin, program := range map[string]string{"/usr/bin/berth-master": "master", "/usr/bin/berth-worker": "worker", "/usr/bin/berth": "berth"} {
		v := run(t, nil, bin, "--version")
		if !strings.HasPrefix(v, program+" "+debVersion+"\n") || !strings.Contains(v, "built:       2026-11-26T00:00:00Z") {
			t.Errorf("%s --version:\n%s", bin, v)
		}
	}

	run(t, nil, "dpkg", append([]string{"--purge"}, packages...)...)
	for _, p := range packages {
		if installed(p) {
			t.Errorf("%s still installed after the purge", p)
		}
	}
	for _, path := range []string{"/usr/bin/berth-master", "/usr/bin/berth-worker", "/usr/bin/berth",
		"/usr/lib/systemd/system/berth-master.service", "/usr/lib/systemd/system/berth-worker.service",
		"/etc/berth/master.toml", "/etc/berth/worker.toml", "/etc/berth/berth.toml"} {
		if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s is still there after the purge (%v)", path, err)
		}
	}
	// The state and its user outlive a purge (docs/OPERATIONS.md).
	if _, err := os.Stat("/var/lib/berth-master"); err != nil {
		t.Errorf("the purge removed the master's state: %v", err)
	}
}

// checkFile checks a path's type, mode and owner.
func checkFile(t *testing.T, path string, mode os.FileMode, owner, group string, dir bool) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Error(err)
		return
	}
	st := fi.Sys().(*syscall.Stat_t)
	o, _ := user.LookupId(strconv.Itoa(int(st.Uid)))
	g, _ := user.LookupGroupId(strconv.Itoa(int(st.Gid)))
	if fi.IsDir() != dir || fi.Mode().Perm() != mode || o == nil || o.Username != owner || g == nil || g.Name != group {
		t.Errorf("%s: %v %d:%d, want %v %s:%s", path, fi.Mode(), st.Uid, st.Gid, mode, owner, group)
	}
}

// The docs as the packages and the tarball ship them (README.md, LICENSE
// and docs/ whole, from the repository's root) have no link that leads
// out of what is shipped: the source tree's own check, without root, of
// what TestDistInstallAndPurge checks of the installed packages.
func TestShippedDocsLinkOnlyToShippedFiles(t *testing.T) {
	shipped := fstest.MapFS{}
	err := fs.WalkDir(os.DirFS(".."), ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if name == "README.md" || name == "LICENSE" || name == "docs" || strings.HasPrefix(name, "docs/") {
			if d.IsDir() {
				shipped[name] = &fstest.MapFile{Mode: fs.ModeDir | 0o755}
				return nil
			}
			data, err := os.ReadFile(filepath.Join("..", name))
			if err != nil {
				return fmt.Errorf("reading %s: %w", name, err)
			}
			shipped[name] = &fstest.MapFile{Data: data}
		} else if d.IsDir() && name != "." {
			return fs.SkipDir
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	checkLinks(t, "the repository's README and docs as shipped", shipped)
}

// mdLink is an inline link or image of markdown, [text](target) or
// ![alt](target), with the target's optional "title".
var mdLink = regexp.MustCompile(`\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)`)

var (
	codeSpan  = regexp.MustCompile("`[^`]*`")
	urlScheme = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
)

// relativeLinks are the relative targets of md's links, with the line of
// each, outside code (fenced blocks and `spans`); anchors within the page,
// URLs with a scheme and the fragments of the others are left out.
func relativeLinks(md string) (targets []string, lines []int) {
	fenced := false
	for i, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		line = codeSpan.ReplaceAllString(line, "")
		for _, m := range mdLink.FindAllStringSubmatch(line, -1) {
			target, _, _ := strings.Cut(m[1], "#")
			if target == "" || urlScheme.MatchString(target) {
				continue
			}
			targets, lines = append(targets, target), append(lines, i+1)
		}
	}
	return targets, lines
}

// checkLinks follows every relative link of README.md and docs/*.md in
// fsys (where: what it is, for the errors): each must name a file or a
// directory within fsys.
func checkLinks(t *testing.T, where string, fsys fs.FS) {
	t.Helper()
	pages, err := fs.Glob(fsys, "docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	pages = append([]string{"README.md"}, pages...)
	if len(pages) < 2 {
		t.Fatalf("%s: no docs/*.md", where)
	}
	links := 0
	for _, page := range pages {
		data, err := fs.ReadFile(fsys, page)
		if err != nil {
			t.Errorf("%s: %v", where, err)
			continue
		}
		targets, lines := relativeLinks(string(data))
		for i, target := range targets {
			links++
			name := path.Join(path.Dir(page), target)
			if !fs.ValidPath(name) {
				t.Errorf("%s: %s:%d links to %s, outside what is shipped", where, page, lines[i], target)
				continue
			}
			if _, err := fs.Stat(fsys, name); err != nil {
				t.Errorf("%s: %s:%d links to %s, which is not shipped: %v", where, page, lines[i], target, err)
			}
		}
	}
	if links == 0 {
		t.Errorf("%s: no relative link found in %d pages: the check checks nothing", where, len(pages))
	}
}

// checkTarball checks that the tarball holds what an operator installs
// from, under one top directory.
func checkTarball(t *testing.T, path, top string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	var names []string
	tree := fstest.MapFS{} // what it holds, the docs' text with it
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(h.Name, top) || h.Uid != 0 {
			t.Errorf("%s: entry %s (uid %d) outside %s or not root's", path, h.Name, h.Uid, top)
		}
		name := strings.TrimPrefix(h.Name, top)
		names = append(names, name)
		if name = strings.TrimSuffix(name, "/"); name == "" {
			continue
		}
		f := &fstest.MapFile{Mode: h.FileInfo().Mode()}
		if strings.HasSuffix(name, ".md") {
			if f.Data, err = io.ReadAll(tr); err != nil {
				t.Fatal(err)
			}
		}
		tree[name] = f
	}
	checkLinks(t, path, tree)
	for _, want := range []string{"bin/berth-master", "bin/berth-worker", "bin/berth", "systemd/berth-master.service",
		"systemd/berth-worker.service", "config/master.toml", "config/worker.toml", "config/berth.toml", "README.md", "LICENSE",
		"docs/OPERATIONS.md", "docs/SECURITY.md", "bin/pi"} {
		if !slices.Contains(names, want) {
			t.Errorf("%s lacks %s: %v", path, want, names)
		}
	}
}
